"""Files generated from the code: the Bazel BUILD file and docs/configuration.md."""
