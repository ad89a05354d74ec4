"""Issue 39's rooms stay single: the counts of tests/rooms.py that reached their target stay there.

At main bb64538 (before this work) they were: 1 alias table of spaCy's short entity labels outside
text/ (detect/features/span_features.py), 3 modules tagging spans with spaCy's entities (select's
features, the LR/SVM features, the report's paper text), 2 ``--resume`` flags, 3 flags with two
meanings (``--seed``, ``--executor``, ``--examples``), 1 package without a docstring and 56 writes in
jobs/ outside hades_ray/pipeline (``python -m tests.rooms -v`` lists each). The select/annotate imports
are held by tests/test_layering.py, the writes by tests/test_writes.py, the "en" literals by
tests/test_language_value.py."""

from __future__ import annotations

from tests import rooms

# Modules that read spaCy's entities for something other than tagging a span: MASK keeps entities whole
# (perturb), and the score command's words keep a name together (score/words.py). The one span tagger is
# text/tagging.py, used by selection, the LR/SVM features and the report.
ENTITY_READERS = {"hades_ray/text/tagging.py", "hades_ray/perturb/mask_units.py", "hades_ray/score/words.py"}


def test_entity_labels_and_their_aliases_live_in_text_only():
    assert rooms.entity_alias_literals() == []


def test_one_span_tagger():
    assert set(rooms.span_taggers()) <= ENTITY_READERS


def test_no_resume_flag_on_top_of_the_step_rule():
    assert rooms.resume_flags() == []


def test_no_flag_has_two_meanings():
    assert rooms.flags_declared_twice() == []


def test_every_package_says_what_it_holds():
    assert rooms.undocumented_packages() == []


def test_the_counts_print_as_a_table(capsys):
    rooms.main()
    printed = capsys.readouterr().out.splitlines()
    assert any(line.startswith("imports between select/ and annotate/: 0") for line in printed)
    assert any(line.startswith("lines of jobs/: ") for line in printed)
