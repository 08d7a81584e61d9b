"""Golden model of the link channel (``LinkChannel``, docs/channel.md), bit- and cycle-exact.

It is written from the documented contract, not from the gateware: the same generators, seed
expansion and decisions, so that a test can predict which bits the hardware flips, and in which
cycle every beat comes out. :meth:`ChannelModel.step` takes the inputs of one clock cycle and
returns the outputs of that cycle (the values the registers hold during it), then moves to the
next cycle.
"""

from collections import deque
from dataclasses import dataclass

__all__ = ["ChannelModel", "CycleInputs", "CycleOutputs", "xorshift64", "seed_state",
           "scale", "threshold_for_ber", "ber_for_threshold"]

M32 = (1 << 32) - 1
M64 = (1 << 64) - 1
BURST_LENGTH_MAX = (1 << 16) - 1
COUNTER_MAX = M32


def xorshift64(x):
    """One step of Marsaglia's xorshift64 with shifts (13, 7, 17)."""
    x ^= (x << 13) & M64
    x ^= x >> 7
    x ^= (x << 17) & M64
    return x


def seed_state(seed, generator):
    """Initial state of generator ``generator`` (0: bursts, 1…: injectors) for ``seed``."""
    odd = 2 * generator + 1
    hi = (seed ^ (0x9E3779B9 * odd)) & M32
    lo = (seed ^ (0x7F4A7C15 * odd)) & M32
    return hi << 32 | lo


def scale(value32, width):
    """A 32-bit uniform value mapped onto a bit position 0 … width−1 (multiply-high)."""
    return (value32 * width) >> 32


def threshold_for_ber(ber, width, injectors):
    """``error_threshold`` for bit error rate ``ber``: ``ber·width·2^32/injectors`` (first
    order, see :func:`ber_for_threshold` for the exact rate)."""
    return min(M32, round(ber * width * 2 ** 32 / injectors))


def ber_for_threshold(threshold, width, injectors):
    """Exact per-bit flip probability of the random injectors for ``threshold``."""
    return 1 - (1 - threshold / 2 ** 32 / width) ** injectors


@dataclass
class CycleInputs:
    """Everything the channel samples in one cycle."""
    valid: int = 0
    data: int = 0
    last: int = 0
    ready: int = 1
    delay: int = 1
    error_threshold: int = 0
    burst_length: int = 0
    burst: int = 0
    link_up: int = 1
    seed: int = 0
    reseed: int = 0
    rst: int = 0


@dataclass
class CycleOutputs:
    valid: int
    data: int
    last: int


@dataclass
class Counters:
    flipped_bits: int = 0
    errored_beats: int = 0
    bursts: int = 0
    lost: int = 0
    overruns: int = 0

    def add(self, name, amount=1):
        setattr(self, name, min(COUNTER_MAX, getattr(self, name) + amount))


@dataclass
class _Burst:
    begin: int = 0          # first bit to flip in the next beat
    remaining: int = 0      # bits still to flip, from `begin` on


@dataclass
class ChannelModel:
    """Cycle model of ``LinkChannel(width, max_delay, injectors)``.

    ``step(CycleInputs)`` returns the :class:`CycleOutputs` of that cycle; ``counters`` holds
    the counter values after the last step's clock edge.
    """
    width: int
    max_delay: int = 64
    injectors: int = 4

    def __post_init__(self):
        self.threshold = 0                   # error_threshold of the previous cycle
        self._reset(0)

    def _reset(self, seed):
        self.line = deque()                  # slots (valid, data, last), oldest first
        self.out = None                      # slot popped last cycle, on `o` this cycle
        self.counters = Counters()
        # The flipped-bit counters are pipelined: last cycle's mask, the bit count of the mask
        # before it (per octet in the gateware), and the count before that.
        self.flips = 0
        self.octet_count = 0
        self.flip_count = 0
        self._load(seed)

    def _load(self, seed):
        self.generators = [seed_state(seed, g) for g in range(self.injectors + 1)]
        self.burst = _Burst()

    def _target(self, delay):
        return min(max(delay, 1), self.max_delay) - 1

    def _random_mask(self, threshold):
        mask = 0
        for g in range(1, self.injectors + 1):
            state = self.generators[g]
            if (state & M32) < threshold:
                mask |= 1 << scale(state >> 32, self.width)
        return mask

    def _burst_mask(self):
        burst = self.burst
        if not burst.remaining:
            return 0
        end = min(self.width, burst.begin + burst.remaining)
        return ((1 << end) - 1) ^ ((1 << burst.begin) - 1)

    def _advance_burst(self):
        burst = self.burst
        if burst.remaining:
            self.burst = _Burst(0, max(0, burst.begin + burst.remaining - self.width))

    def _start_burst(self, length):
        # Each burst draws its start bit from generator 0 once.
        begin = scale(self.generators[0] >> 32, self.width)
        self.generators[0] = xorshift64(self.generators[0])
        self.burst = _Burst(begin, length & BURST_LENGTH_MAX)

    def step(self, x):
        """Outputs of this cycle for inputs ``x``; then the clock edge."""
        slot = self.out
        due = slot is not None and slot[0]
        o = CycleOutputs(valid=int(due and x.link_up), data=slot[1] if slot else 0,
                         last=slot[2] if slot else 0)
        # A beat's decisions use the error_threshold of the cycle before it.
        threshold, self.threshold = self.threshold, x.error_threshold
        if x.rst:
            self._reset(x.seed)
            return o

        # Counters count this cycle's events; flipped bits reach theirs through 3 registers.
        self.counters.add("flipped_bits", self.flip_count)
        if self.flips:
            self.counters.add("errored_beats")
        self.flip_count, self.octet_count = self.octet_count, bin(self.flips).count("1")
        if due and not x.link_up:
            self.counters.add("lost")
        if o.valid and not x.ready:
            self.counters.add("overruns")

        # Errors of this cycle's beat, then the draws for the next one.
        mask = 0
        if x.valid:
            mask = self._random_mask(threshold) | self._burst_mask()
        self.flips = mask
        started = (x.burst and not self.burst.remaining and x.burst_length and not x.reseed)
        if x.reseed:
            self._load(x.seed)
        elif x.valid:
            self.generators[1:] = [xorshift64(s) for s in self.generators[1:]]
            self._advance_burst()
        if started:
            self.counters.add("bursts")
            self._start_burst(x.burst_length)

        # The line: a FIFO of slots, `held` of them before this cycle's.
        held, target = len(self.line), self._target(x.delay)
        if x.valid or held <= target:
            self.line.append((x.valid, (x.data ^ mask) if x.valid else x.data, x.last))
        self.out = self.line.popleft() if held >= target else None
        return o
