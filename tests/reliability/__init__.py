"""The reliability suite: the app under its gunicorn configuration, met by
crowds, broken clients, bad input, hostile input, a SIGKILL and a soak. Run
it with `python -m tests.reliability` (see __main__.py); the smallest
profile runs in the test suite (tests/test_reliability.py)."""
