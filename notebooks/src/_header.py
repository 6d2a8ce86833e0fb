# %% tags=["colab"]
# Only on Google Colab: fetch the course and install what Colab lacks. Elsewhere this does nothing.
import os
import subprocess
import sys

COURSE_REPO_URL = "https://github.com/attention-course/attention-course.git"
if "google.colab" in sys.modules and not os.path.exists("course_setup.py"):
    subprocess.run(["git", "clone", "--depth", "1", COURSE_REPO_URL, "/content/course"], check=True)
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "torchview", "graphviz",
                    "graphviz-pure", "ipywidgets"], check=True)
    os.chdir("/content/course/notebooks")
    sys.path.insert(0, "/content/course/notebooks")
