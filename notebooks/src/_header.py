# %% tags=["colab"] cellView="form" jupyter={"source_hidden": true}
# @title On Google Colab, this cell fetches the course. Elsewhere it does nothing.
# (one line on screen: Colab shows a form cell's title, JupyterLab a hidden cell's first line)
import sys

if "google.colab" in sys.modules:
    import importlib.util
    import os
    import subprocess

    COURSE_REPO_URL = "https://github.com/attention-course/attention-course.git"
    COURSE_DIR = "/content/attention-course"
    if not os.path.isdir(COURSE_DIR):  # once per Colab machine; a rerun or restart reuses it
        subprocess.run(["git", "clone", "--quiet", "--depth", "1", COURSE_REPO_URL, COURSE_DIR],
                       check=True)
    # Colab has torch, matplotlib, ipywidgets, tqdm and Graphviz's `dot`; it lacks torchview
    if importlib.util.find_spec("torchview") is None:
        subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "torchview"], check=True)
    os.chdir(f"{COURSE_DIR}/notebooks")  # so `import course_setup` and relative paths work
    if f"{COURSE_DIR}/notebooks" not in sys.path:
        sys.path.insert(0, f"{COURSE_DIR}/notebooks")
