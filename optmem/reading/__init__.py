"""Reading: the language rules of optmem in one home — the word lists and question-shape rules
that read what a query asks and what a statement says.

* `cues` — the words that say *when* or *that it changed*: present, past, present-perfect and
  change cues, in English and Chinese, with their guards.
"""
