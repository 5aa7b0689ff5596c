"""Helpers the tests share (not tests themselves): where things are, real processes to run,
files and warehouses to make, the tiny model, the streaming test server, fuzzing. Fixtures that
use them are in tests/conftest.py."""
