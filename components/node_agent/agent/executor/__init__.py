"""The node executor: the host steps the controller asks for, reported on its own node only."""
