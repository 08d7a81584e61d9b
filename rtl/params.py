"""Elaboration parameters: what each one means and which values it takes, declared once beside
the constructor of the block that has it.

A block declares its parameters with the :func:`parameters` class decorator::

    @parameters(radix=Param("ports", IntRange(2, MAX_RADIX)),
                voq_beats=Param("8-octet beats per virtual output queue", PowerOfTwo(16, 4096)))
    class SwitchCore(wiring.Component):
        def __init__(self, radix=8, voq_beats=256):
            ...

The decorator checks every declared argument before the constructor runs, so a bad value is
refused with a message naming it and its range before any hardware is built, and it records
``SwitchCore.PARAMETERS``: ``{name: (default, Param)}``, the defaults read from the
constructor's own signature. A block that passes ``**kwargs`` on to a block it holds names that
block in ``forward=`` (with the names it sets itself in ``exclude=``); the forwarded parameters
join its own, with their defaults. The Verilog exports (:mod:`ethlink.exports`), the CLI's
``--param`` and ``ethlink verilog --list`` read ``PARAMETERS``; nothing restates a default or a
range.

Checks that involve two parameters stay in the constructor, before any submodule is made.
"""

import functools
import inspect
from dataclasses import dataclass

__all__ = ["Check", "IntRange", "PowerOfTwo", "OneOf", "Flag", "Param", "parameters",
           "check_int_range", "check_power_of_two"]


class Check:
    """The values a parameter may take: ``check(name, value)`` returns ``value`` or raises
    :class:`ValueError` naming the parameter; ``str(check)`` describes the values."""
    def __call__(self, name, value):
        if not self.accepts(value):
            raise ValueError(f"{name} must be {self.rule()}, not {value!r}")
        return value

    def accepts(self, value):
        raise NotImplementedError

    def rule(self):
        raise NotImplementedError

    def __str__(self):
        return self.rule()


def _is_int(value):
    return isinstance(value, int) and not isinstance(value, bool)


class IntRange(Check):
    """An integer from ``low`` to ``high`` (both included)."""
    def __init__(self, low, high):
        self.low, self.high = low, high

    def accepts(self, value):
        return _is_int(value) and self.low <= value <= self.high

    def rule(self):
        return f"an integer from {self.low} to {self.high}"


class PowerOfTwo(IntRange):
    """A power of two from ``low`` to ``high``."""
    def accepts(self, value):
        return super().accepts(value) and value & (value - 1) == 0

    def rule(self):
        return f"a power of two from {self.low} to {self.high}"


class OneOf(Check):
    """One of ``values``."""
    def __init__(self, *values):
        self.values = values

    def accepts(self, value):
        return _is_int(value) and value in self.values

    def rule(self):
        return "one of " + ", ".join(str(v) for v in self.values)


class Flag(OneOf):
    """0 or 1 (``False`` or ``True``)."""
    def __init__(self):
        super().__init__(0, 1)

    def accepts(self, value):
        return value in (0, 1)


@dataclass(frozen=True)
class Param:
    """One elaboration parameter: ``doc`` says what it sets, ``check`` which values it takes."""
    doc: str
    check: Check

    def validate(self, name, value):
        return self.check(name, value)

    def help(self, default):
        return f"{self.doc} ({self.check.rule()}; default {default})"


def check_int_range(name, value, low, high):
    """``value`` if it is an integer (not a bool) from ``low`` to ``high``, else
    :class:`ValueError` (for derived values a block checks itself)."""
    return IntRange(low, high)(name, value)


def check_power_of_two(name, value, low, high):
    """``value`` if it is a power of two from ``low`` to ``high``, else :class:`ValueError`."""
    return PowerOfTwo(low, high)(name, value)


def parameters(*, forward=None, exclude=(), **declared):
    """Class decorator: declare the constructor's parameters (``name=Param(...)``), check them
    before the constructor runs, and record them in ``cls.PARAMETERS``.

    ``forward`` is the class that receives the constructor's ``**kwargs``: its ``PARAMETERS``
    (but those named in ``exclude``, which the constructor sets itself) join this class's, and
    a keyword it does not know is refused here.
    """
    def decorate(cls):
        init = cls.__init__
        signature = inspect.signature(init)
        table = {}
        for name, param in declared.items():
            if name not in signature.parameters:
                raise TypeError(f"{cls.__name__} declares parameter {name!r} that its "
                                f"constructor does not take")
            default = signature.parameters[name].default
            if default is inspect.Parameter.empty:
                raise TypeError(f"{cls.__name__}: parameter {name!r} needs a default")
            table[name] = (default, param)
        varkw = next((p.name for p in signature.parameters.values()
                      if p.kind is inspect.Parameter.VAR_KEYWORD), None)
        if forward is not None:
            if varkw is None:
                raise TypeError(f"{cls.__name__} forwards parameters but takes no **kwargs")
            for name, entry in forward.PARAMETERS.items():
                if name not in exclude:
                    table.setdefault(name, entry)
        cls.PARAMETERS = table

        @functools.wraps(init)
        def checked_init(self, *args, **kwargs):
            try:
                # Only the constructor of the class being built checks (a subclass declares
                # its own table and calls this one through ``super``).
                if type(self).__init__ is checked_init:
                    _check_arguments(cls, signature, varkw, self, args, kwargs)
                init(self, *args, **kwargs)
            except (TypeError, ValueError):
                # An Elaboratable that was never built would warn when collected; this one
                # never existed for the caller.
                self._MustUse__silence = True
                raise
        cls.__init__ = checked_init
        return cls
    return decorate


def _check_arguments(cls, signature, varkw, self, args, kwargs):
    bound = signature.bind(self, *args, **kwargs)
    bound.apply_defaults()
    values = dict(bound.arguments)
    extra = values.pop(varkw, {}) if varkw else {}
    unknown = set(extra) - set(cls.PARAMETERS)
    if unknown:
        raise TypeError(f"{cls.__name__} has no parameter(s) {', '.join(sorted(unknown))}")
    values.update(extra)
    for name, (_, param) in cls.PARAMETERS.items():
        if name in values:
            param.validate(name, values[name])
