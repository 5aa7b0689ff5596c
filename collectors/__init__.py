"""Collectors: the standard probe suite run on GPU hosts, writing fleetplan run files.

Collectors never open the warehouse. (Issue #5 builds them.)
"""
