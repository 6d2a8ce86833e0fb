"""Hidden cases: every graded exercise run on inputs drawn at grading time, compared with solutions/.

`spec.py` holds the `@hidden` registry and `Draw`; `lessonNN.py` the specs of lesson NN, one per
check id; `confirm.py` draws the cases of a grading run and judges the student's results.
"""
