"""The campaign of training runs: driving them, publishing each into results/, archiving
superseded ones."""
