# %% [markdown] en="e795d1283c04"
# # 注意力课程：游乐场
#
# 课程的所有小部件都在这一页上：移动一个控件，它的图就会重绘。不需要先写任何代码；这些小部件使用课程自己的代码，从不使用你的练习。每张图下面都有一段说明，告诉你看到的是什么、可以试试什么。每个小部件都注明了它来自哪一课，那里解释并测量了它背后的原理。

# %% en="606d43cef075"
# `make playground LANG=zh` 用 Voilà 显示这一页，由它运行这个单元；在 JupyterLab 中，请自己运行它
import course_setup  # noqa: F401  （把课程加入路径）
from course.widgets.playground import show_all

show_all()
