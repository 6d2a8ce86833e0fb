"""Lesson 04's compute functions: a bias on one pair, and the toy MSA's column statistics."""
import math

import torch

from course.widgets.base import render_png
from course.widgets.lesson04 import (column_mutual_information, draw_pair_bias, example_scores,
                                     one_hot_msa, pair_bias_explorer, pair_frequencies, read_fasta,
                                     weights_with_pair_bias)


def test_a_pair_bias_changes_only_its_row():
    scores = example_scores()
    plain = torch.softmax(scores, dim=-1)
    biased = weights_with_pair_bias(scores, 1, 3, 2.0)
    others = [0, 2, 3, 4]
    assert torch.equal(biased[others], plain[others])
    assert biased[1, 3] > plain[1, 3]
    assert torch.allclose(biased.sum(-1), torch.ones(5, dtype=torch.float64))


def test_extreme_biases_select_or_mask_the_key():
    scores = example_scores()
    assert weights_with_pair_bias(scores, 0, 2, 50.0)[0, 2] > 0.999
    assert weights_with_pair_bias(scores, 0, 2, -50.0)[0, 2] < 1e-12


def test_toy_msa_file_matches_its_generator():
    import importlib.util

    from course import ROOT
    spec = importlib.util.spec_from_file_location("make_toy_msa", ROOT / "scripts" / "make_toy_msa.py")
    generator = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(generator)
    names, sequences = read_fasta()
    assert sequences == generator.toy_msa()
    assert len(names) == 48 and {len(s) for s in sequences} == {60}


def test_only_the_coupled_pair_has_full_mutual_information():
    _, sequences = read_fasta()
    mi = column_mutual_information(one_hot_msa(sequences))
    assert math.isclose(mi[36, 53].item(), math.log(2), rel_tol=1e-12)  # positions 37, 54
    assert mi[11, 19] < 0.05                                            # decoys 12, 20
    top = mi.flatten().argmax().item()
    assert {top // 60, top % 60} == {36, 53}


def test_one_sequence_shows_no_coupling():
    _, sequences = read_fasta()
    assert column_mutual_information(one_hot_msa(sequences[:1])).abs().max() == 0


def test_pair_frequencies_are_joint_distributions():
    msa = one_hot_msa(["LV", "ST", "LV", "ST"], alphabet="LSTV")
    joint = pair_frequencies(msa)
    assert torch.allclose(joint.sum(dim=(-2, -1)), torch.ones(2, 2, dtype=torch.float64))
    assert joint[0, 1, 0, 3] == 0.5 and joint[0, 1, 0, 2] == 0.0  # L with V half the time, never T


def test_drawing_and_widget():
    assert render_png(draw_pair_bias, i=0, j=4, b=-10.0)[:4] == b"\x89PNG"
    box = pair_bias_explorer()
    before = box.children[1].value
    box.children[0].children[2].value = -5.0
    assert box.children[1].value != before
