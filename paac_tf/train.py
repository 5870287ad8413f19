"""`python -m paac_tf.train`: runs paac_tf/commands/train.py as the main module."""
import runpy

if __name__ == "__main__":
  runpy.run_module("paac_tf.commands.train", run_name="__main__", alter_sys=True)
