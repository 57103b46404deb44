"""Syncthing set up through its REST API, when the person gives Kept the API key (issue 29,
item 5; docs/sync.md#syncthing-through-its-rest-api). Layer: app. Runs on: the caller's thread
(the CLI's main thread, or a worker; every call blocks for at most ``TIMEOUT_S``).

``set_up_folder(api, path, device)`` makes Syncthing share Kept's sync folder with one other
device, and says what it did:

1. find the folder Syncthing already has at ``path`` (same resolved path), or accept the one
   folder labelled "Kept" that the other device offers (its id: the joining side, after the
   founder's side ran this), or add one (id ``kept-xxxxx``, label "Kept", Syncthing's own folder defaults for the rest, its
   file watcher included: a new segment is sent without Kept asking for a scan);
2. add the other device to Syncthing if it does not know it yet (addresses "dynamic", as the
   person's Syncthing does for any device they add by hand);
3. share the folder with it, and set ``ignorePerms`` (Kept's files are 0600 here; another OS
   has other modes, and the files are encrypted anyway).

Nothing else is changed, and nothing is removed. Calling it twice changes nothing the second
time (it says "already").

**Only this computer.** The address must be a loopback one (``127.0.0.1``, ``::1``,
``localhost``) unless ``allow_remote`` (not offered by the CLI): the API key opens the person's
whole Syncthing, so it is sent nowhere else; no proxy is ever used, whatever the environment
says. ``https://`` is accepted for a GUI with TLS on; its self-signed certificate is not
checked (loopback: there is nobody in between to check against).

**One clear error** for each way it fails (``SyncthingError.user_message``): not running or
a wrong address, the key refused (403), an address that answers but is not Syncthing, a device
id that is not one. The key never appears in a message or a log line.
"""

from __future__ import annotations

import ipaddress
import json
import logging
import secrets
import ssl
import string
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from app.errors import AppError

log = logging.getLogger(__name__)

DEFAULT_ADDRESS = "127.0.0.1:8384"     # Syncthing's own default GUI address
TIMEOUT_S = 10.0
FOLDER_LABEL = "Kept"
_ID_CHARS = string.ascii_lowercase + string.digits


class SyncthingError(AppError):
    """``field``: which of the person's inputs to fix ("key", "address", "device" or "" for
    none), so the window can put the cursor there without reading the message."""

    user_message = "Syncthing could not be set up."
    hint = ("Open Syncthing's web page (Actions > Settings > GUI) for its address and API "
            "key, or share the folder there by hand.")
    exit_code = 2

    def __init__(self, user_message: str | None = None, *, field: str = "") -> None:
        super().__init__(user_message)
        self.field = field


@dataclass(frozen=True, slots=True)
class SetUpReport:
    """What ``set_up_folder`` did, in the person's words (``lines``) and as flags."""

    folder_id: str
    folder_added: bool
    device_added: bool
    shared: bool                 # the folder was newly shared with the device
    perms_ignored: bool          # ignorePerms was newly set
    lines: tuple[str, ...] = field(default=())


class SyncthingApi:
    """Syncthing's REST API at one address with one key. Holds no connection between calls."""

    def __init__(self, address: str, api_key: str, *, allow_remote: bool = False,
                 timeout: float = TIMEOUT_S) -> None:
        self.base = _base_url(address or DEFAULT_ADDRESS, allow_remote)
        if not api_key.strip():
            raise SyncthingError("No API key given: copy it from Syncthing's web page "
                                 "(Actions > Settings > GUI > API Key).", field="key")
        self._key = api_key.strip()
        self.timeout = timeout
        handlers: list[urllib.request.BaseHandler] = [urllib.request.ProxyHandler({})]
        if self.base.startswith("https:"):
            ctx = ssl.create_default_context()
            ctx.check_hostname = False
            ctx.verify_mode = ssl.CERT_NONE  # Syncthing's own self-signed GUI certificate
            handlers.append(urllib.request.HTTPSHandler(context=ctx))
        self._opener = urllib.request.build_opener(*handlers)

    # --- calls ----------------------------------------------------------------------------
    def call(self, method: str, path: str, params: dict[str, str] | None = None,
             body: Any = None) -> Any:
        query = f"?{urllib.parse.urlencode(params)}" if params else ""
        data = None if body is None else json.dumps(body).encode()
        headers = {"X-API-Key": self._key}
        if data is not None:
            headers["Content-Type"] = "application/json"
        req = urllib.request.Request(f"{self.base}{path}{query}", data=data, method=method,
                                     headers=headers)
        where = self.base.split("//", 1)[1]
        try:
            with self._opener.open(req, timeout=self.timeout) as resp:
                raw = resp.read()
        except urllib.error.HTTPError as exc:
            if exc.code in (401, 403):
                raise SyncthingError(f"Syncthing at {where} refused the API key ({exc.code}). "
                                     "Copy it again from Syncthing's web page (Actions > "
                                     "Settings > GUI > API Key).", field="key") from None
            if exc.code == 404:
                raise SyncthingError(f"{where} answers, but not as Syncthing's REST API "
                                     f"(404 for {path}). Is that Syncthing's GUI address?",
                                     field="address") from None
            raise SyncthingError(f"Syncthing at {where} refused {method} {path} "
                                 f"({exc.code}).") from None
        except (urllib.error.URLError, TimeoutError, ConnectionError, OSError) as exc:
            log.info("syncthing: %s %s failed (%s)", method, path, type(exc).__name__)
            raise SyncthingError(f"Syncthing is not answering at {where}: is it running, and "
                                 "is that its GUI address (Actions > Settings > GUI)?",
                                 field="address") from None
        if not raw.strip():
            return None
        try:
            return json.loads(raw)
        except ValueError:
            raise SyncthingError(f"{where} answers, but not as Syncthing's REST API (not "
                                 "JSON). Is that Syncthing's GUI address?", field="address") from None

    def my_id(self) -> str:
        status = self.call("GET", "/rest/system/status")
        if not isinstance(status, dict) or "myID" not in status:
            raise SyncthingError("That address answers, but not as Syncthing.", field="address")
        return str(status["myID"])

    def device_id(self, text: str) -> str:
        """The canonical form of a device id the person typed, or one clear error."""
        got = self.call("GET", "/rest/svc/deviceid", {"id": text.strip()})
        if not isinstance(got, dict) or "id" not in got:
            raise SyncthingError(f"{text.strip()!r} is not a Syncthing device id (the other "
                                 "device's Actions > Show ID).", field="device")
        return str(got["id"])

    def scan(self, folder_id: str, sub: str = "") -> None:
        """Rescan the folder (or one path in it) now; returns when Syncthing has."""
        self.call("POST", "/rest/db/scan", {"folder": folder_id, **({"sub": sub} if sub else {})})


def set_up_folder(api: SyncthingApi, path: Path, device: str, *,
                  device_name: str = "") -> SetUpReport:
    """Share ``path`` with ``device`` in the Syncthing behind ``api`` (module docstring)."""
    other = api.device_id(device)
    me = api.my_id()
    if other == me:
        raise SyncthingError("That is this computer's own Syncthing device id: give the "
                             "other device's (Actions > Show ID there).", field="device")
    target = _resolved(str(path))
    lines: list[str] = []
    folders = api.call("GET", "/rest/config/folders") or []
    found = next((f for f in folders if _resolved(str(f.get("path", ""))) == target), None)
    folder_added = found is None
    if found is None:
        folder = dict(api.call("GET", "/rest/config/defaults/folder") or {})
        taken = {f.get("id") for f in folders}
        offer = _kept_offer(api, other, taken)
        fid = offer or _new_folder_id(taken)
        folder.update(id=fid, label=FOLDER_LABEL, path=str(path), ignorePerms=True,
                      devices=[{"deviceID": me}])
        api.call("POST", "/rest/config/folders", body=folder)
        found = api.call("GET", f"/rest/config/folders/{_q(fid)}")
        lines.append(f"Accepted the folder {other[:7]} offers (id {fid}) at {path}."
                     if offer else
                     f"Added the folder {path} to Syncthing as {FOLDER_LABEL!r} (id {fid}).")
    else:
        fid = str(found["id"])
        lines.append(f"Syncthing already has the folder {path} (id {fid}).")
    devices = api.call("GET", "/rest/config/devices") or []
    device_added = not any(d.get("deviceID") == other for d in devices)
    if device_added:
        dev = dict(api.call("GET", "/rest/config/defaults/device") or {})
        dev.update(deviceID=other, name=device_name or other[:7])
        api.call("POST", "/rest/config/devices", body=dev)
        lines.append(f"Added the device {other[:7]} to Syncthing.")
    members = list(found.get("devices") or [])
    shared = not any(m.get("deviceID") == other for m in members)
    perms = not found.get("ignorePerms", False) and not folder_added
    patch: dict[str, Any] = {}
    if shared:
        patch["devices"] = [*members, {"deviceID": other}]
    if perms:
        patch["ignorePerms"] = True
    if patch:
        api.call("PATCH", f"/rest/config/folders/{_q(fid)}", body=patch)
    lines.append(f"Shared it with {other[:7]}." if shared
                 else f"It was already shared with {other[:7]}.")
    if perms:
        lines.append("Set it to ignore file permissions.")
    if (shared or device_added or folder_added) and not (folder_added and offer):
        lines.append(f"On the device {other[:7]}, accept the folder when Syncthing asks (or "
                     "set Syncthing up there the same way: Kept accepts it), then join there "
                     "with a pairing code.")
    log.info("syncthing: folder %s added=%s device_added=%s shared=%s", fid, folder_added,
             device_added, shared)
    return SetUpReport(fid, folder_added, device_added, shared, perms or folder_added,
                       tuple(lines))


def _kept_offer(api: SyncthingApi, other: str, taken: set[Any]) -> str | None:
    """The id of the one folder labelled "Kept" that ``other`` offers this Syncthing and it
    has not added (the founder's side set it up with ``set_up_folder``), or None. Accepting
    it (the same id) is what makes the two Syncthings sync one folder; a new id would make a
    second folder that the other side never gets. An older Syncthing without the pending
    list (before 1.13) gives None."""
    try:
        pending = api.call("GET", "/rest/cluster/pending/folders", {"device": other})
    except SyncthingError:
        return None
    if not isinstance(pending, dict):
        return None
    ids = [fid for fid, d in pending.items()
           if fid not in taken and isinstance(d, dict)
           and (d.get("offeredBy") or {}).get(other, {}).get("label") == FOLDER_LABEL]
    return str(ids[0]) if len(ids) == 1 else None


def _base_url(address: str, allow_remote: bool) -> str:
    text = address.strip()
    if "//" not in text:
        text = f"http://{text}"
    parts = urllib.parse.urlsplit(text)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise SyncthingError(f"{address!r} is not an address like {DEFAULT_ADDRESS}.",
                             field="address")
    try:
        port = parts.port
    except ValueError:
        raise SyncthingError(f"{address!r} has no valid port (like {DEFAULT_ADDRESS}).",
                             field="address") from None
    host = parts.hostname
    if not allow_remote and not _loopback(host):
        raise SyncthingError(f"{host} is not this computer: Kept only gives the API key to "
                             "a Syncthing on this computer (127.0.0.1, ::1 or localhost).",
                             field="address")
    shown = f"[{host}]" if ":" in host else host
    return f"{parts.scheme}://{shown}{f':{port}' if port else ''}"


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _resolved(path: str) -> str:
    try:
        return str(Path(path).expanduser().resolve())
    except (OSError, RuntimeError):
        return path


def _new_folder_id(taken: set[Any]) -> str:
    while True:
        fid = "kept-" + "".join(secrets.choice(_ID_CHARS) for _ in range(5))
        if fid not in taken:
            return fid


def _q(text: str) -> str:
    return urllib.parse.quote(text, safe="")
