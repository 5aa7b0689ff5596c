"""Fleet planning: capacity, cost, energy and carbon, and the mixed-integer program.

Pure domain logic: imports neither Streamlit nor DuckDB. (Issue #3 builds it.)
"""
