"""Reading: every language rule of optmem in one home — the word lists and question-shape rules
that read what a query asks and what a statement says.

The tokeniser (`optmem.text`) splits text into terms the same way for everything; the readers
here decide what those terms *mean* to a search:

* `lexicon` — the word lists several readers (and the tokeniser's statement comparison) share:
  function words, intensifiers, particles, Chinese numerals, measure words and units;
* `questions` — the form of a question: "how many", 多少, the Chinese question words and
  particles cut out of a query, the sentences of a turn that ask;
* `cues` — the words that say *when* or *that it changed*: present, past and
  change cues, in English and Chinese, with their guards;
* `query` — a query read once into an `Intent` (its terms, what it asks, the names it writes),
  which every later stage of search reads.

Each rule that changes an order has a switch in `[ranking]` (`optmem.settings.Ranking`). This
package imports nothing from it here: `optmem.text` reads `lexicon` alone, without the readers.
"""
