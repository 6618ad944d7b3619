"""What each command does, as typed functions the CLI calls: demo, run, replay."""
