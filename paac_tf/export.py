"""`python -m paac_tf.export`: runs paac_tf/commands/export.py as the main module."""
import runpy

if __name__ == "__main__":
  runpy.run_module("paac_tf.commands.export", run_name="__main__", alter_sys=True)
