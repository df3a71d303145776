"""SCRAM-SHA-256 password authentication, server side, through the ``scramp`` library
(RFC 5802 and RFC 7677, as PostgreSQL implements them: section 55.3 "SASL Authentication").

The salted password (salt, stored key, server key, iteration count) is derived once, when
the server starts (``ScramVerifier``), as PostgreSQL derives it once at ``CREATE ROLE ...
PASSWORD``: a connection attempt costs one HMAC check, not a PBKDF2 run, so a client cannot
make the server burn 4096 SHA-256 rounds per attempt, and the plaintext password is not kept.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets

from scramp import ScramException, ScramMechanism

from catalog import rbac
from catalog.errors import SqlError, INVALID_AUTHORIZATION_SPECIFICATION
from catalog.snapshot import Role
from sqlfront.identifiers import truncate_identifier

MECHANISM = "SCRAM-SHA-256"
#: PostgreSQL's default ``scram_iterations`` (section 20.3.1)
ITERATIONS = 4096
#: PostgreSQL's SCRAM_DEFAULT_SALT_LEN, in bytes
SALT_BYTES = 16
#: PostgreSQL's invalid_authorization_specification
INVALID_AUTHORIZATION = INVALID_AUTHORIZATION_SPECIFICATION


def check_login_name(user: str) -> str:
    """The role name a startup packet's user name logs in as, refusing, before any
    password is asked for, a name no one may log in as: none at all (PostgreSQL: "no
    PostgreSQL user name specified in startup packet") or one Materialize reserves
    (``mz_system``, ``mz_support``, any ``mz_``/``pg_`` name, PUBLIC: its system roles
    are reachable on its internal port only, never with a user's password).

    A name longer than 63 bytes is truncated as an identifier in a statement is
    (``sqlfront.identifiers.truncate_identifier``), as PostgreSQL's ProcessStartupPacket
    truncates it: ``CREATE ROLE`` with the long name made the truncated one.

    Raises:
        SqlError FATAL 28000 for an empty or reserved name."""
    if not user:
        raise SqlError(INVALID_AUTHORIZATION, "no PostgreSQL user name specified in startup packet",
                       severity="FATAL")
    user = truncate_identifier(user)
    if rbac.is_reserved_role_name(user):
        raise SqlError(INVALID_AUTHORIZATION, f'role "{user}" is reserved for internal use and cannot log in',
                       severity="FATAL")
    return user


def login_verifier(role: Role | None, server: ScramVerifier, *, auto_create: bool) -> ScramVerifier | None:
    """The SCRAM secret a user logging in as ``role`` (None: no such role) must prove,
    or None when no password logs it in.

    - A role with a password of its own (CREATE/ALTER ROLE ... PASSWORD) needs that one.
    - The server's password (``--password-file``) logs in a role without one of its own
      that is not a superuser, and a user without a role when roles are made at login
      (``--auto-create-roles``). A superuser without a password of its own is refused:
      the server password is shared by every such user, so it must not make anyone a
      superuser. The one exception is the bootstrap role (``materialize``, id ``u1``):
      it keeps the server password until it gets a password of its own, as PostgreSQL's
      bootstrap superuser is reached before any role has a password (``initdb --pwfile``).

    A None answer is still played out as a full SCRAM exchange that fails with 28P01,
    against :func:`mock_verifier`'s secret, as PostgreSQL does for an unknown role, so a
    client learns nothing about which roles exist or are superusers.
    """
    if role is None:
        return server if auto_create else None
    if role.password is not None:
        try:
            return ScramVerifier.from_secret(role.password)
        except ValueError:  # a damaged secret logs no one in, and never falls back
            return None
    if role.superuser and role.id != rbac.BOOTSTRAP_ROLE_ID:
        return None
    return server


class ScramVerifier:
    """The server's SCRAM secret for one password, and the exchanges checked against it.

    Raises:
        ValueError (from the constructor) if SASLprep (RFC 4013) rejects ``password``,
        for example because it holds a prohibited control character.
    """

    def __init__(self, password: str, iterations: int = ITERATIONS):
        self._mechanism = ScramMechanism(MECHANISM)
        try:
            # (salt, stored_key, server_key, iteration_count): what pg_authid keeps
            # a salt of PostgreSQL's length (scramp's own is 32 bytes): mock secrets show the same
            self._auth_info = self._mechanism.make_auth_info(password, iteration_count=iterations,
                                                             salt=secrets.token_bytes(SALT_BYTES))
        except ScramException as e:
            raise ValueError(f"the password cannot be used for SCRAM: {e}") from None

    @classmethod
    def from_secret(cls, secret: str) -> "ScramVerifier":
        """The verifier of a stored secret (:func:`scram_secret`'s text form).

        Raises:
            ValueError for text that is not such a secret."""
        try:
            mech, rest = secret.split("$", 1)
            iters_salt, keys = rest.split("$")
            iters, salt = iters_salt.split(":")
            stored, server = keys.split(":")
            if mech != MECHANISM:
                raise ValueError(mech)
            info = (base64.b64decode(salt), base64.b64decode(stored), base64.b64decode(server), int(iters))
        except (ValueError, TypeError) as e:
            raise ValueError(f"not a SCRAM-SHA-256 secret: {e}") from None
        return cls._of(info)

    @classmethod
    def _of(cls, auth_info: tuple[bytes, bytes, bytes, int]) -> "ScramVerifier":
        self = cls.__new__(cls)
        self._mechanism = ScramMechanism(MECHANISM)
        self._auth_info = auth_info
        return self

    def secret(self) -> str:
        """pg_authid's text form: ``SCRAM-SHA-256$iterations:salt$storedkey:serverkey``."""
        salt, stored, server, iters = self._auth_info
        b64 = lambda b: base64.b64encode(b).decode()  # noqa: E731
        return f"{MECHANISM}${iters}:{b64(salt)}${b64(stored)}:{b64(server)}"

    def check_password(self, password: str) -> bool:
        """True if ``password`` is the one this secret was made from (for clients that
        send a password itself, such as the console's HTTP Basic authentication): one
        PBKDF2 derivation with the secret's salt and iterations, compared in constant time."""
        salt, stored, _server, iters = self._auth_info
        try:
            derived = self._mechanism.make_auth_info(password, iteration_count=iters, salt=salt)
        except ScramException:
            return False
        return hmac.compare_digest(derived[1], stored)

    def exchange(self) -> "ScramExchange":
        """A new exchange for one connection attempt (a fresh server nonce)."""
        # The user name in the client-first message is ignored, as PostgreSQL does: the
        # startup packet's user is the one that counts, and there is one password.
        return ScramExchange(self._mechanism.make_server(lambda _user: self._auth_info))


def mock_verifier(user: str, nonce: bytes) -> ScramVerifier:
    """The secret the exchange of a user no password logs in runs against (an unknown
    role, or one with no usable password): its salt is the first ``SALT_BYTES`` of
    SHA-256(user name, then ``nonce``) and its iteration count ``ITERATIONS``, as
    PostgreSQL's ``scram_mock_salt`` and ``mock_scram_secret`` (auth-scram.c) make them.
    The salt is the same on every attempt for one name and differs between names, as a
    real role's does, so the server-first message tells a client nothing; its keys are
    random, so no proof matches.

    ``nonce`` is the server's secret (PostgreSQL's per-cluster ``mock_auth_nonce``):
    32 bytes derived from the catalog key, so every process of one catalog agrees."""
    salt = hashlib.sha256(user.encode() + nonce).digest()[:SALT_BYTES]
    return ScramVerifier._of((salt, secrets.token_bytes(32), secrets.token_bytes(32), ITERATIONS))


def scram_secret(password: str) -> str:
    """The SCRAM-SHA-256 secret of ``password`` in pg_authid's text form (what CREATE
    ROLE ... PASSWORD stores: PostgreSQL never keeps the password itself).

    Raises:
        ValueError if SASLprep rejects the password."""
    return ScramVerifier(password).secret()


class ScramExchange:
    """One SCRAM exchange: ``first`` with the client-first message, then ``final`` with
    the client-final message."""

    def __init__(self, server):
        self._server = server

    def first(self, client_first: str) -> str:
        """The server-first message (``r=nonce,s=salt,i=iterations``) for ``client_first``
        (``n,,n=user,r=nonce``).

        Raises:
            ValueError for a malformed message or a channel binding we do not offer.
        """
        header_end = client_first.find(",", client_first.find(",") + 1) + 1  # after "n,," or "y,a=x,"
        header, bare = client_first[:header_end], client_first[header_end:]
        # libpq and other drivers send an empty user name ("n=,r=..."): PostgreSQL ignores
        # it (55.3.1) and scramp refuses empty attributes. Let scramp parse a stand-in name,
        # then sign the client's own bytes: the AuthMessage is the client-first-bare as sent.
        empty_user = header_end > 0 and bare.startswith("n=,")
        try:
            self._server.set_client_first(header + "n=*," + bare[3:] if empty_user else client_first)
            if empty_user:
                self._server.client_first_bare = bare
            return self._server.get_server_first()
        except ScramException as e:
            raise ValueError(str(e)) from None

    def final(self, client_final: str) -> str | None:
        """The server-final message (``v=signature``) if the client's proof is right,
        else None (wrong password, wrong nonce or a malformed message)."""
        try:
            self._server.set_client_final(client_final)
            return self._server.get_server_final()
        except ScramException:
            return None
