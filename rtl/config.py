"""Elaboration-time checks of block parameters, shared by the blocks.

A bad parameter is refused with a message naming it and its range before any hardware is
built (the exports call the same checks before constructing a component).
"""

__all__ = ["check_int_range", "check_power_of_two"]


def check_int_range(name, value, low, high):
    """``value`` if it is an integer (not a bool) from ``low`` to ``high``, else
    :class:`ValueError`."""
    if not isinstance(value, int) or isinstance(value, bool) or not low <= value <= high:
        raise ValueError(f"{name} must be an integer from {low} to {high}, not {value!r}")
    return value


def check_power_of_two(name, value, low, high):
    """``value`` if it is a power of two from ``low`` to ``high`` (:func:`check_int_range`
    first), else :class:`ValueError`."""
    check_int_range(name, value, low, high)
    if value & (value - 1):
        raise ValueError(f"{name} must be a power of two, not {value}")
    return value
