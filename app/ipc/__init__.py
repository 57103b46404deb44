"""Local IPC: the owner of an unlocked vault serves ``VaultAPI`` on a Unix socket in the vault
folder (``server``); ``client.RemoteVault`` calls it; ``protocol`` is the wire format."""
