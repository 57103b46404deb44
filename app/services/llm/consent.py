"""Which LLM endpoints may be used (docs/security.md#llm-consent).
Layer: app. Runs on: any thread; opens no socket and resolves no name.

An endpoint outside loopback needs the person's recorded consent for exactly that endpoint:
:func:`check_consent` runs before any socket is opened (and before any DNS lookup). Only
literal loopback addresses and ``localhost`` count as local; a name that merely resolves to
loopback is remote.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass, field
from urllib.parse import urlsplit, urlunsplit

from app.errors import AppError, ValidationError

# Known provider policies, shown in the consent text (docs/security.md#a-cloud-llm-endpoint). Only
# what is documented; any other host gets the generic wording.
RETENTION: dict[str, str] = {
    "api.openai.com": ("OpenAI keeps API requests in abuse-monitoring logs for up to 30 days "
                       "(not used for training by default; Zero Data Retention needs approval)"),
}
_GENERIC_RETENTION = "its own retention policy applies: check it before you agree"


class ConsentRequired(AppError):
    """A request to an endpoint outside this computer without the person's consent for it."""

    user_message = "Sending memories to this LLM endpoint needs your consent first."
    hint = "Turn on consent for this endpoint in Settings, or use a local endpoint."
    exit_code = 2

    def __init__(self, base_url: str, host: str) -> None:
        self.base_url = base_url      # the normalised URL to record as consent
        self.host = host
        super().__init__(consent_text(base_url))


@dataclass(frozen=True, slots=True)
class LlmConfig:
    base_url: str
    model: str
    consent: str = ""             # the normalised base_url the person consented to, or ""
    redact: bool = True
    timeout: float = 60
    api_key: str | None = field(default=None, repr=False)


def normalise_base_url(base_url: str) -> str:
    """Lower-case scheme and host, no trailing slash, no query or fragment: the form consent
    is recorded in. Raises ValidationError for anything but an http(s) URL with a host."""
    raw = (base_url or "").strip()
    if not raw:
        raise ValidationError("No LLM endpoint is set (extraction.llm_base_url).")
    try:
        parts = urlsplit(raw)
        host = parts.hostname
        port = parts.port
    except ValueError as exc:
        raise ValidationError("The LLM endpoint is not a valid URL.") from exc
    scheme = parts.scheme.lower()
    if scheme not in ("http", "https") or not host:
        raise ValidationError("The LLM endpoint must be an http:// or https:// URL with a host.")
    if parts.username is not None or parts.password is not None:
        raise ValidationError("The LLM endpoint URL must not contain a user name or password; "
                              "set the API key separately.")
    netloc = f"[{host}]" if ":" in host else host
    if port is not None:
        netloc += f":{port}"
    return urlunsplit((scheme, netloc.lower(), parts.path.rstrip("/"), "", ""))


def _host(base_url: str) -> str:
    try:
        return (urlsplit((base_url or "").strip()).hostname or "").lower()
    except ValueError:
        return ""


def is_loopback(base_url: str) -> bool:
    """True for localhost, 127.0.0.0/8 and ::1 (also ::ffff:127.x). Anything else, including
    names that merely resolve to loopback, is treated as remote."""
    host = _host(base_url).rstrip(".")
    if not host:
        return False
    if host == "localhost":
        return True
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        return False
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return ip.is_loopback


def consent_text(base_url: str) -> str:
    """What the person is told (and agrees to) before memories go to ``base_url``."""
    host = _host(base_url) or base_url
    retention = RETENTION.get(host, _GENERIC_RETENTION)
    plain = ""
    if (base_url or "").strip().lower().startswith("http://"):
        plain = " The connection is not encrypted (http), so others on the network can read it."
    return (f"Sending memories to {host} needs your consent. {host} sees every snippet sent "
            f"to it and may keep them: {retention}.{plain} With redaction on, names, emails, "
            f"phone numbers, money amounts, health conditions, addresses, ids and passwords "
            f"are replaced first: {redaction_example()} Embeddings are never sent.")


EXAMPLE = "Sam Reyes earns £48,000 and was diagnosed with asthma; he lives at 4 Mill Lane."


def redaction_example() -> str:
    """One sentence before and after redaction, made by the redactor itself (so it cannot
    promise more than it does)."""
    from app.services.llm.redaction import redact
    sent, _ = redact(EXAMPLE, ["Sam Reyes"])
    return f"“{EXAMPLE}” is sent as “{sent}”"


def check_consent(cfg: LlmConfig) -> str:
    """Raise unless ``cfg`` may be used; return the normalised base URL. Opens no socket and
    resolves no name."""
    url = normalise_base_url(cfg.base_url)
    if is_loopback(url):
        return url
    consent = ""
    if cfg.consent:
        try:
            consent = normalise_base_url(cfg.consent)
        except ValidationError:
            consent = ""
    if consent != url:
        raise ConsentRequired(url, _host(url))
    return url
