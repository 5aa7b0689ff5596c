"""Latency against load: a configuration's measured levels as a curve (P99 TTFT and P99 TPOT
against the request rate, to a saturation), and the rate it predicts within a target.

- `load_curve`: `fit_curve` builds a `LoadCurve` from one configuration's levels; its
  `capacity` and `interval` answer "how much within these targets".
- `levels`: the levels a curve rests on (`curve_levels`), the saturation (`saturation_of`)
  and each metric's axis with its queue form.
- `in_flight`: a closed loop's curve against log concurrency (`in_flight_axes`).
- `monotone`: the monotone fits the axes use (`isotonic`, `Pchip`).
- `envelope_flags`: which levels claim more than their server's physical bounds (never stable).
"""
