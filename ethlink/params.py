"""``--param key=value`` options shared by the commands that elaborate an export."""

__all__ = ["parse_params"]


def parse_params(items):
    """Turn ``["key=value", ...]`` into ``{"key": "value", ...}``.

    Values stay strings; the export that receives them converts and checks them. Only the first
    ``=`` splits, so a value may itself contain ``=``. A later item overrides an earlier one
    with the same key. ``None`` (no ``--param`` given) gives an empty dict.

    Raises :class:`ValueError` (with a message fit for ``argparse``'s ``parser.error``) for an
    item without ``=`` or with an empty key.
    """
    params = {}
    for item in items or ():
        key, sep, value = item.partition("=")
        key = key.strip()
        if not sep:
            raise ValueError(f"--param {item!r}: expected KEY=VALUE")
        if not key:
            raise ValueError(f"--param {item!r}: empty KEY")
        params[key] = value
    return params
