"""Credentials in URLs, kept out of every message: a value echoed in an error reaches CI logs and PR comments.

The password of a URL's user part is written `xxxxx`, as Docker writes it in its own messages (moby's registry
ValidateMirror: "http://foo:xxxxx@mirror-1.example.com/"); a user part without a password is written `xxxxx` whole,
since that is how a token travels (`https://TOKEN@host`). A user part with a password and no scheme
(`user:password@registry.example.com`, as a registry prefix would carry one) is redacted the same way.
"""

from __future__ import annotations

import re

MASK = "xxxxx"
# scheme://user[:password]@host...: the user part is everything up to the last @ before the host's end (a password
# written with an @ in it included).
_URL = re.compile(r"(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*://)(?P<netloc>[^/?#\s'\"<>\\]*)")
# user:password@host.domain with no scheme, where a word starts.
_BARE = re.compile(r"(?<![\w/:.@%~+-])(?P<user>[\w.~%+-]+):(?P<password>[^\s/@'\"]+)@(?=[A-Za-z0-9-]+\.[A-Za-z0-9.-])")


def _netloc(match: re.Match[str]) -> str:
    netloc = match["netloc"]
    if "@" not in netloc:
        return match[0]
    user, host = netloc.rsplit("@", 1)
    name, colon, _ = user.partition(":")
    return f"{match['scheme']}{f'{name}:{MASK}' if colon else MASK}@{host}"


def redacted(text: str) -> str:
    """The text with every URL's password (and a lone user part) written `xxxxx`."""
    return _BARE.sub(lambda m: f"{m['user']}:{MASK}@", _URL.sub(_netloc, text))


def holds_credential(text: str) -> bool:
    """Whether the text carries a user part in a URL, which `redacted` would hide."""
    return redacted(text) != text
