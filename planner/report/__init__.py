"""A plan in words and tables: the CSV's schema and digits, short labels for GPUs and rates, a
terminal summary (`table`), and why the plan looks the way it does (`explain`).
The dashboard's readable tables are `fleetplan.services.plan_tables`.
"""
