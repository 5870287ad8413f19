"""paac_tf: efficient parallel deep RL (PAAC and Ape-X) on TensorFlow 2 / Keras."""
from setuptools import find_packages, setup

# Two stacks, chosen by the Python version (paac_tf/stacks.py says what each runs; setup.py
# does not import paac_tf, whose import runs the version check).
REFERENCE = 'python_version < "3.12"'
CURRENT = 'python_version >= "3.12"'

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
    python_requires=">=3.9,<3.14",
    # The reference stack, pinned together: tf-agents 0.19 and dm-reverb 0.14 are built
    # against TF 2.15. The current stack: TF 2.20-2.21 with tf-keras (Keras 2: the
    # checkpoints and the tf-agents policy need it), and tf-agents 0.19.0 with gym 0.23.0
    # from requirements-no-deps.txt installed with `pip install --no-deps` (their pins,
    # tensorflow-probability ~0.23 and gym <= 0.23's, refuse TF 2.20; the Makefile does it).
    # TF >= 2.20 no longer brings tensorboard (tf.summary needs it) nor tf-agents pygame
    # (`--record`). Run-time dependencies only; upper bounds where the code relies on one
    # version's API.
    install_requires=[
        "tensorflow==2.15.1; " + REFERENCE,
        "tf-agents[reverb]==0.19.0; " + REFERENCE,
        "numpy<2; " + REFERENCE,
        "tensorflow>=2.20,<2.22; " + CURRENT,
        "tf-keras>=2.20,<2.22; " + CURRENT,
        "tensorflow-probability==0.25.0; " + CURRENT,
        "tensorboard>=2.20,<2.22; " + CURRENT,
        "pygame>=2.5; " + CURRENT,
        "dm-tree; " + CURRENT,          # tf-agents' own dependencies, which --no-deps skips
        "cloudpickle; " + CURRENT,
        "wrapt; " + CURRENT,
        "typing-extensions; " + CURRENT,
        "gymnasium>=1.0,<2",
        "ale-py>=0.11.1,<0.13",   # AtariVectorEnv (the C++ vector env) and its options
        "gin-config==0.5.0",
        "absl-py",
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
        "ray": ["ray==2.60.0; " + REFERENCE],
        # gymnasium's MuJoCo envs (HalfCheetah-v5, Hopper-v5, ...) for continuous control.
        # Verified with Python 3.11 in a fresh venv: mujoco 3.3.7 (cp311 manylinux wheel),
        # gymnasium 1.3.0, numpy 1.26.4: HalfCheetah-v5 and Hopper-v5 step, no warning.
        # Not 4.x: mujoco 4.0.0 is a pure-Python meta-package over mujoco-core, and loading
        # HalfCheetah-v5's model there warns of a deprecated attribute "to be removed".
        "mujoco": ["gymnasium[mujoco]>=1.0,<2", "mujoco>=3.3,<3.4"],
    },
)
