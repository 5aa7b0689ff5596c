"""The solver kernel: a mixed-integer program in scipy's terms, solved by HiGHS (scipy's `milp`).

- `rows`: a sparse constraint matrix built one row at a time (`Rows`).
"""
