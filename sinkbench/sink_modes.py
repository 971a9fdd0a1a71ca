"""How the sink key ``p_sink`` is chosen; torch-free so that ``sinkbench --help`` stays fast.

* ``"head"``: per (prompt, layer, head), the key that receives the most attention summed over queries.
* ``"query"``: per query, the argmax of its own attention row.
* ``"first"``: the first real token (the paper's C.3 probe uses position 0).
"""

SINK_MODES = ("head", "query", "first")

#: Modes that give one ``p_sink`` per head, as the margin bound needs.
PER_HEAD_SINK_MODES = ("head", "first")
