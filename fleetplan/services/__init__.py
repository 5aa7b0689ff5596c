"""Use cases that join the warehouse's data and the planner's logic, shared by the dashboard and
the command line (`planning`: a plan from a scenario and the warehouse). They sit above
warehouse/ and planner/ and below app/ and cli/.
"""
