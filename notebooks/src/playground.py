# %% [markdown]
# # The attention course: playground
#
# Every widget of the course on one page: move a control and its figure redraws. Nothing to
# write first; the widgets use the course's own code, never your exercises. Under each figure, a
# caption says what you are looking at and what to try. Each widget names the lesson it comes
# from, where the ideas behind it are explained and measured.

# %%
# `make playground` shows this page with Voilà, which runs this cell; in JupyterLab, run it yourself
import course_setup  # noqa: F401  (puts the course on the path)
from course.widgets.playground import show_all

show_all()
