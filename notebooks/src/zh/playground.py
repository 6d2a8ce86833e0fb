# %% [markdown] en="0c618a6808d0"
# # 注意力课程：游乐场
#
# 课程的所有小部件都在这一页上：移动一个控件，它的图就会重绘。不需要先写任何代码；这些小部件使用课程自己的代码，从不使用你的练习。每张图下面都有一段说明，告诉你看到的是什么、可以试试什么。每个小部件都注明了它来自哪一课，那里解释并测量了它背后的原理。
#
# 由 `make playground LANG=zh`（Voilà）提供；在 JupyterLab 中，运行这个单元即可。

# %% en="f3ed8a0c5a73"
import course_setup  # noqa: F401  （把课程加入路径）
from course.widgets.playground import show_all

show_all()
