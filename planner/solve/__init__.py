"""The solver kernel: a mixed-integer program in scipy's terms, solved by HiGHS (scipy's `milp`)
for the peak, day and availability programs alike.

- `kernel`: `Program`, its solve within a deadline (`solve`, `run`), the fewest-GPU second solve
  (`tie_break`), the one status map (`outcome`), a limit defined once (`LimitRow`), and the
  recipe for a new constraint family.
- `rows`: a sparse constraint matrix built one row at a time (`Rows`).
"""
