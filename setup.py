"""paac_tf: efficient parallel deep RL (PAAC and Ape-X) on TensorFlow 2 / Keras."""
import os
import sys

# The package's Python-version check (paac_tf/__init__.py imports nothing else): an
# unsupported Python stops here, at once, with its message.
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import paac_tf  # noqa: E402,F401

from setuptools import find_packages, setup  # noqa: E402

setup(
    name="paac_tf",
    version="0.1.0",
    description="Efficient parallel deep RL: PAAC and Ape-X on TensorFlow 2 / Keras",
    long_description=open("README.md").read(),
    long_description_content_type="text/markdown",
    # The shipped configs live in the top-level configs/ and install as paac_tf/configs/,
    # where bookkeeping/config.py finds them (`--gin_file=atari.gin` from any directory).
    packages=find_packages(include=["paac_tf", "paac_tf.*"]) + ["paac_tf.configs"],
    package_dir={"paac_tf.configs": "configs"},
    package_data={"paac_tf": ["data/*.csv", "data/*.md"], "paac_tf.configs": ["*.gin"]},
    python_requires=">=3.9,<3.12",
    # Pinned together: tf-agents 0.19 and dm-reverb 0.14 are built against TF 2.15.
    # Run-time dependencies only; upper bounds where the code relies on one version's API.
    install_requires=[
        "tensorflow==2.15.1",
        "tf-agents[reverb]==0.19.0",
        "gymnasium>=1.0,<2",
        "ale-py>=0.11.1,<0.13",   # AtariVectorEnv (the C++ vector env) and its options
        "gin-config==0.5.0",
        "absl-py",
        "numpy<2",
        "tqdm",                   # progress bar (terminal and notebook)
        "pillow",                 # `python -m paac_tf.evaluate --record`: GIFs of episodes
        "psutil",                 # `python -m tools.apex.benchmark`: process memory
    ],
    extras_require={
        # nbclient and ipykernel execute examples/cartpole.ipynb (tests/test_notebook.py);
        # ipython < 8.18 keeps the stack's typing_extensions 4.5 (TF 2.15's reference).
        "dev": ["pytest", "pytest-timeout", "hypothesis", "ruff==0.17.6", "nbclient",
                "nbformat", "ipykernel", "ipython<8.18"],
        # The tools' extra: figures, and the reports' aggregates with their bootstrap
        # intervals (tools/reports/aggregates.py). pandas < 3: rliable's dependency `arch`
        # does not work with pandas 3.
        "plot": ["matplotlib", "rliable==1.2.0", "pandas<3"],
        "notebook": ["ipywidgets"],   # tqdm's notebook progress widget
        # Ape-X on a Ray cluster (train_eval.launcher = 'ray'): the version tested with this
        # stack (cp311 wheel, beside protobuf 4.25, numpy < 2 and dm-reverb 0.14).
        "ray": ["ray==2.60.0"],
        # gymnasium's MuJoCo envs (HalfCheetah-v5, Hopper-v5, ...) for continuous control.
        # Verified with Python 3.11 in a fresh venv: mujoco 3.3.7 (cp311 manylinux wheel),
        # gymnasium 1.3.0, numpy 1.26.4: HalfCheetah-v5 and Hopper-v5 step, no warning.
        # Not 4.x: mujoco 4.0.0 is a pure-Python meta-package over mujoco-core, and loading
        # HalfCheetah-v5's model there warns of a deprecated attribute "to be removed".
        "mujoco": ["gymnasium[mujoco]>=1.0,<2", "mujoco>=3.3,<3.4"],
    },
)
