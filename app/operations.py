"""How each operation of the contract is reached, declared once, on ``VaultAPI``. Layer: app.
Pure (standard library only).

Every member of ``app.api.VaultAPI`` carries one mark (``@op(...)``): who may call it and how
it travels. Everything that used to be a hand-kept list is read from these marks:

- the owner's socket whitelist, its person-only set and its refusals with their reasons
  (``app.ipc.protocol.METHODS`` / ``REFUSED``);
- what an assistant's connection may call (``app.agent_scope.AGENT_METHODS``), and the check
  that ``AgentSession`` wraps each of them;
- the client proxy (``app.ipc.client.RemoteVault``): one generic method per operation, built
  from the contract's own signature; person-only ones prove the password first when the
  client was given a way to ask for it (the CLI's elevation);
- the MCP tool table (``app.mcp_server``): each tool names the operation it serves, and its
  read-only hint is the operation's access.

Adding an operation: declare it on ``VaultAPI`` with its mark, implement it on ``Vault``
(``app/facade.py``), and add its CLI command or MCP tool if it has one.
``tests/guards/test_operations.py`` adds a throwaway operation and checks it is served, refused
and exposed as declared.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

__all__ = ["Access", "Op", "op", "operations"]

F = TypeVar("F", bound=Callable[..., Any])
MARK = "__kept_op__"


class Access(enum.Enum):
    READ = "read"                # served on the socket to any connection, in parallel
    WRITE = "write"              # served on the socket; serialised by the database
    PERSON = "person"            # the person's decision: the socket serves it after ``elevate``
    PERSON_READ = "person_read"  # a read only the person makes (every memory whole), after it
    SESSION = "session"          # a property a client learns from ``session`` at connect
    HELPER = "helper"            # static, no I/O: runs in the caller's process, never sent
    LOCAL = "local"              # never over the socket (``why`` says why); refused remotely

    @property
    def remote(self) -> bool:
        return self in (Access.READ, Access.WRITE, Access.PERSON, Access.PERSON_READ)

    @property
    def person(self) -> bool:
        return self in (Access.PERSON, Access.PERSON_READ)

    @property
    def writes(self) -> bool:
        return self in (Access.WRITE, Access.PERSON)


@dataclass(frozen=True, slots=True)
class Op:
    name: str
    access: Access
    agent: bool = False        # an assistant may call it (through ``AgentSession``)
    slow: bool = False         # may take minutes (a backup): the client waits without limit
    why: str = ""              # LOCAL: why it never crosses the socket
    tool: str | None = None    # the MCP tool that serves it, if any (agent operations only)


def op(access: Access, *, agent: bool = False, slow: bool = False, why: str = "",
       tool: str | None = None) -> Callable[[F], F]:
    """Mark a ``VaultAPI`` member (under ``@property`` for a property)."""
    if (access is Access.LOCAL) != bool(why):
        raise TypeError("a LOCAL operation says why, and only it does")
    if tool is not None and not agent:
        raise TypeError("an MCP tool serves an operation an assistant may call")
    if agent and access.person:
        raise TypeError("an assistant never makes the person's decisions")

    def mark(fn: F) -> F:
        setattr(fn, MARK, Op(fn.__name__, access, agent, slow, why, tool))
        return fn
    return mark


def operations(cls: type) -> Mapping[str, Op]:
    """Every marked member of ``cls`` and its bases, by name. A public member without a mark
    is an error: nothing reaches a caller undeclared."""
    out: dict[str, Op] = {}
    for klass in reversed(cls.__mro__):
        for name, member in vars(klass).items():
            fn = member.fget if isinstance(member, property) else member
            mark = getattr(fn, MARK, None)
            if isinstance(mark, Op):
                out[name] = mark
            elif klass is cls and not name.startswith("_") and callable(fn):
                raise TypeError(f"{cls.__name__}.{name} has no @op mark")
    return out
