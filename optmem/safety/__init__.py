"""Safety: what keeps stored text from harming an agent that reads it. `scan`: the content
scanner (invisible characters, prompt injection, secrets) on the rules of `rules` (phrases,
secrets) and `languages` (concepts × languages), reading a text the ways `readings` says, with the
tables of `chars`; `fence`: stored text reaches a model as data inside one fenced block. Nothing
is imported here: `optmem.safety.scan` and `optmem.safety.fence` are imported by name."""
