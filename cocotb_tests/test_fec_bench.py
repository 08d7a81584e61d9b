"""``ethlink bench fec --no-synth``: the figures it reports hold to the decoder's contract and
the simulated codeword error rates agree with the analytical curve."""

import json
from math import sqrt

from ethlink.bench import FEC_SYMBOLS_PER_BEAT, codeword_error_rate
from ethlink.rtl.phy.fec.decoder import decoder_latency
from ethlink.rtl.phy.fec.symbols import beats_for


def test_bench_fec_without_synthesis(tmp_path, cli):
    target, plot = tmp_path / "bench.json", tmp_path / "ber.png"
    code, out, _ = cli("bench", "fec", "--no-synth", "--json", str(target), "--plot", str(plot),
                       "--codewords", "300")
    assert code == 0
    result = json.loads(target.read_text())
    for p in FEC_SYMBOLS_PER_BEAT:
        fill = beats_for(272, p)
        assert result["encoder_latency_cycles"][str(p)] == 1
        assert result["decoder_latency_cycles"][str(p)] == fill + decoder_latency(p)
        assert abs(result["codewords_per_cycle"][str(p)] - 1 / fill) < 1e-9
    assert result["ecp5"] is None
    for point in result["codeword_error_rate_by_ber"]:
        assert abs(point["ber_measured"] / point["ber_set"] - 1) < 0.15, point
        # The simulated count of codeword errors within 4 standard deviations (plus a little
        # for the channel's approximation of independent bit errors) of the analytical one.
        n, q = point["codewords"], codeword_error_rate(point["ber_measured"])
        errors = point["uncorrectable"] + point["miscorrected"]
        assert abs(point["codeword_errors_expected"] - n * q) < 1e-9 * max(1, n * q), point
        assert abs(errors - n * q) <= 4 * sqrt(n * q * (1 - q)) + 3, point
    assert plot.read_bytes().startswith(b"\x89PNG")
    assert "CER sim" in out
