"""The one error a user's input can cause in a library function: the CLI prints it and exits 2."""


class UsageError(Exception):
    """Bad input from the user (a missing table, a wrong topic, a malformed option): exit 2, message only."""
