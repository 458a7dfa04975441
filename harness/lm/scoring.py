"""Teacher-forced scoring for transformers causal LMs, on token ids (torch; imported lazily).

:func:`score_ids`
    Summed log-prob of each continuation after its prompt, one right-padded forward per chunk, under the
    distribution generation samples from (:func:`harness.lm.generation.scaled_logprobs`: ``logits / temperature``).
:func:`score_matrix_ids`
    Every continuation under every prompt, reusing each prompt's KV cache across all continuations: each
    prompt runs once (prompts batched, left-padded), then many (prompt, continuation) pairs per forward, each
    row on its prompt's cached keys/values. This is what makes the MI family cheap.

Shapes are noted as ``(B, T)`` (batch, time) and ``(B, T, V)`` (…, vocabulary).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from harness.lm.generation import left_pad, scaled_logprobs
from harness.lm.kv_cache import cache_keyword, cache_of, select_cache


def score_ids(
    model,
    prompts: Sequence[Sequence[int]],
    continuations: Sequence[Sequence[int]],
    *,
    temperature: float = 1.0,
    pad_id: int = 0,
    batch_size: int = 16,
    entropy: bool = False,
) -> list[tuple[float, int]] | list[tuple[float, int, float]]:
    """``(sum log p(continuation | prompt), len(continuation))`` per pair, teacher-forced; with ``entropy``, a
    third item: the summed entropy (nats) of the distributions each continuation token was scored under (the
    policy's token entropy, as a trainer logs it, on text it did not necessarily sample)."""
    import torch

    device = next(model.parameters()).device
    results: list = []
    for start in range(0, len(prompts), batch_size):
        chunk = list(zip(prompts[start : start + batch_size], continuations[start : start + batch_size], strict=True))
        rows = [list(p) + list(c) for p, c in chunk]
        width = max(len(r) for r in rows)
        ids = torch.full((len(rows), width), pad_id, dtype=torch.long)
        mask = torch.zeros((len(rows), width), dtype=torch.long)
        for i, r in enumerate(rows):
            ids[i, : len(r)] = torch.tensor(r, dtype=torch.long)
            mask[i, : len(r)] = 1
        with torch.inference_mode():
            logits = model(input_ids=ids.to(device), attention_mask=mask.to(device)).logits  # (B, T, V)
            logp = scaled_logprobs(logits[:, :-1], temperature)  # predicts tokens 1..T-1
            token_lp = logp.gather(-1, ids[:, 1:].to(device)[..., None])[..., 0].cpu()  # (B, T-1)
            token_h = -(logp.exp() * logp).sum(-1).cpu() if entropy else None  # (B, T-1)
        for i, (p, c) in enumerate(chunk):
            if not c:
                results.append((0.0, 0, 0.0) if entropy else (0.0, 0))
                continue
            if not p:
                raise ValueError("every prompt must have at least one token")
            span = slice(len(p) - 1, len(p) - 1 + len(c))
            scored = (float(token_lp[i, span].sum()), len(c))
            results.append((*scored, float(token_h[i, span].sum())) if token_h is not None else scored)
    return results


@dataclass
class _PrefixTree:
    """Texts sharing prefixes, as one row: each distinct prefix is one node (a token at a depth), so a prefix
    common to several texts is run once. Nodes are in creation order, parents before children."""

    tokens: list[int]
    parents: list[int]  # -1 for a root (a text's first token)
    depths: list[int]
    members: list[int]  # text indices
    paths: list[list[int]]  # per member, its nodes in order


def _prefix_trees(continuations: Sequence[Sequence[int]], texts: Sequence[int], node_budget: int) -> list[_PrefixTree]:
    """The (non-empty) ``texts`` in lexicographic token order, cut into prefix trees of at most ``node_budget``
    nodes (a longer text gets a tree of its own). In sorted order a text's longest common prefix with any
    earlier text is the one with the text just before it, so each text adds ``len - lcp`` nodes."""
    trees: list[_PrefixTree] = []
    previous: Sequence[int] = ()
    for i in sorted(texts, key=lambda i: (list(continuations[i]), i)):
        text = continuations[i]
        tree = trees[-1] if trees else None
        lcp = 0
        if tree is not None:
            limit = min(len(text), len(previous))
            while lcp < limit and text[lcp] == previous[lcp]:
                lcp += 1
            if len(tree.tokens) + len(text) - lcp > node_budget:
                tree, lcp = None, 0
        if tree is None:
            tree = _PrefixTree([], [], [], [], [])
            trees.append(tree)
        path = tree.paths[-1][:lcp] if lcp else []
        for depth in range(lcp, len(text)):
            tree.tokens.append(int(text[depth]))
            tree.parents.append(path[-1] if path else -1)
            tree.depths.append(depth)
            path.append(len(tree.tokens) - 1)
        tree.members.append(i)
        tree.paths.append(path)
        previous = text
    return trees


def score_matrix_ids(
    model,
    prompts: Sequence[Sequence[int]],
    continuations: Sequence[Sequence[int]],
    *,
    temperature: float = 1.0,
    pad_id: int = 0,
    batch_size: int = 32,
    token_budget: int = 512,
    cache_budget: int = 1 << 16,
    tree_budget: int = 256,
    tree_masks: bool | None = None,
    wanted=None,
):
    """``(sums, counts)`` of shape ``(len(continuations), len(prompts))``; each prompt runs once, its KV cache
    serves every continuation, and a prefix that several continuations share runs once per prompt.

    ``wanted`` (optional ``(len(continuations), len(prompts))`` bool, column subsampling): only those pairs are
    scored; each prompt gets prefix trees of its own wanted texts (prompts wanting the same texts share them), a
    prompt that wants none does not run, and the other sums are NaN.

    The prompts run left-padded in batches of similar length (up to ``batch_size`` rows; ``logits_to_keep=1``:
    only the last position's distribution is needed, for each text's first token). The continuations, in
    lexicographic token order, are merged into prefix trees of at most ``tree_budget`` nodes (a node per
    distinct prefix: reasonings that open alike, as a collapsed policy's do, share their opening); a tree is
    one row, its nodes at positions continuing the prompt's by their depth, each attending to the prompt and to
    its own ancestors (a 4D attention mask). (prompt, tree) rows, ordered by tree size, run in forwards of as
    many rows as fit ``token_budget`` node positions (rows x width; 512 with trees of <= 256 nodes measured
    fastest for the tiny model on CPU, against 64-512 nodes and 512-2048 positions) and ``cache_budget``
    cached + new positions; each row gets its prompt's cached keys/values (a gather along the batch, no copy
    of the rest). A text's log-prob is its first token's under the prompt plus, along its path, each node's
    distribution at its child's token; so only nodes with a child run (a text's last token is a target, never
    an input: ~3-6% fewer positions on the MI workloads), and per tree the row layout and the scored (node,
    token, text) steps are built once, not per prompt. The result equals teacher forcing every pair with a full forward
    (:func:`score_ids`) up to float rounding.

    ``tree_masks`` (default: whether the model's attention takes a custom 4D mask, as ``eager`` and ``sdpa``
    do; flash-attention kernels do not): when false, every text is a tree of its own, a plain causal chain
    under the usual 2D padding mask.
    """
    import numpy as np
    import torch

    device = next(model.parameters()).device
    sums = np.zeros((len(continuations), len(prompts)), dtype=np.float64)
    counts = np.array([[len(c)] * len(prompts) for c in continuations], dtype=np.int64).reshape(
        len(continuations), len(prompts)
    )
    if any(len(p) == 0 for p in prompts):
        raise ValueError("every prompt must have at least one token")
    if wanted is not None:  # checked and applied first: the early returns below hold for it too
        wanted = np.asarray(wanted, dtype=bool)
        if wanted.shape != sums.shape:
            raise ValueError(f"wanted must have shape {sums.shape} (continuations x prompts), got {wanted.shape}")
        sums[~wanted] = np.nan
    texts = [i for i, c in enumerate(continuations) if c]
    if not texts or not prompts:
        return sums, counts
    cache_kw = cache_keyword(model)
    vocab = int(getattr(getattr(model, "config", None), "vocab_size", 0) or 0)
    max_positions = max(1, (1 << 25) // vocab) if vocab else 1 << 30  # rows x width of float32 logits <= 128 MiB
    if tree_masks is None:
        tree_masks = getattr(getattr(model, "config", None), "_attn_implementation", None) in (None, "eager", "sdpa")
    if not tree_masks:
        tree_budget = 0  # one chain per text

    def plans_of_texts(members: Sequence[int]) -> list[_TreePlan]:  # similar widths batch together
        return sorted((_plan(tree) for tree in _prefix_trees(continuations, members, tree_budget)),
                      key=lambda p: len(p.tokens))  # fmt: skip

    if wanted is None:
        shared = plans_of_texts(texts)
        plans_of = dict.fromkeys(range(len(prompts)), shared)
    else:
        by_members: dict[tuple[int, ...], list[_TreePlan]] = {}
        plans_of = {}
        for j in range(len(prompts)):
            members = tuple(i for i in texts if wanted[i, j])
            if members:
                if members not in by_members:
                    by_members[members] = plans_of_texts(members)
                plans_of[j] = by_members[members]
        if not plans_of:
            return sums, counts
    widest = max(len(plans[-1].tokens) for plans in plans_of.values())
    columns = sorted(plans_of, key=lambda j: (len(prompts[j]), j))
    groups: list[list[int]] = []
    for j in columns:  # prompts of similar length together; each group's rows must also fit the text pass
        group = groups[-1] if groups else None
        width = len(prompts[j])  # the longest so far (sorted)
        if (
            group is not None
            and len(group) < batch_size
            and width <= 1.125 * len(prompts[group[0]]) + 8  # little left padding (it is attended by every text row)
            and (len(group) + 1) * (width + widest) <= cache_budget
        ):
            group.append(j)
        else:
            groups.append([j])
    with torch.inference_mode():
        for group in groups:
            ids, head_mask = left_pad([prompts[j] for j in group], pad_id, device)  # (G, P)
            positions = (head_mask.cumsum(-1) - 1).clamp(min=0)
            head = model(
                input_ids=ids, attention_mask=head_mask, position_ids=positions, use_cache=True, logits_to_keep=1
            )
            last_lp = scaled_logprobs(head.logits[:, -1, :], temperature)  # (G, V): each text's first token
            head_cache = cache_of(head)
            width_p = ids.shape[1]
            lengths = head_mask.sum(-1)  # (G,) real prompt lengths
            if wanted is None:  # every prompt has the shared plans, sorted by size: similar tree sizes together
                pairs = [(g, plan) for plan in shared for g in range(len(group))]
            else:
                pairs = sorted(((g, plan) for g, j in enumerate(group) for plan in plans_of[j]),
                               key=lambda row: len(row[1].tokens))  # fmt: skip
            start = 0
            while start < len(pairs):
                stop = start + 1
                while stop < len(pairs):
                    rows_next, nodes = stop + 1 - start, max(1, len(pairs[stop][1].tokens))
                    if (
                        rows_next * nodes > min(token_budget, max_positions)
                        or rows_next * (width_p + nodes) > cache_budget
                    ):
                        break
                    stop += 1
                rows = pairs[start:stop]
                start = stop
                for (g, plan), total in zip(
                    rows,
                    _score_tree_rows(
                        model, cache_kw, rows, head_cache, head_mask, lengths, last_lp, temperature, pad_id, device,
                        tree_masks,
                    ), strict=True,
                ):  # fmt: skip
                    for i, value in zip(plan.members, total, strict=True):
                        sums[i, group[g]] = value
    return sums, counts


@dataclass
class _TreePlan:
    """A tree as its rows run it, built once per tree (not per prompt). Only nodes with a child run: a node's
    output is its distribution of its children's tokens, so a leaf (a text's last token) would predict nothing,
    and no node attends to it; its token is only a scored target."""

    members: list[int]  # text indices (the tree's)
    tokens: object  # (N,) long: the running nodes' tokens, in tree order (parents first)
    depths: object  # (N,) long
    sees: object  # (N, N) bool: [a, b] when running node b is a or one of a's ancestors
    firsts: object  # (M,) long: each member's first token (scored under the prompt's last position)
    step_node: object  # (S,) long: per scored parent -> child step of any member, the parent's running index
    step_token: object  # (S,) long: ... the child's token
    step_member: object  # (S,) long: ... the member (index into tree.members)


def _plan(tree: _PrefixTree) -> _TreePlan:
    import torch

    has_child = [False] * len(tree.tokens)
    for parent in tree.parents:
        if parent >= 0:
            has_child[parent] = True
    running = [n for n, c in enumerate(has_child) if c]  # parents before children, so ancestors come first
    slot = {n: k for k, n in enumerate(running)}
    sees = torch.zeros((len(running), len(running)), dtype=torch.bool)
    for k, n in enumerate(running):
        parent = tree.parents[n]
        if parent >= 0:  # a running node's parent runs too (it has a child)
            sees[k] = sees[slot[parent]]
        sees[k, k] = True
    step_node, step_token, step_member = [], [], []
    for m, path in enumerate(tree.paths):
        for parent, child in zip(path, path[1:], strict=False):  # consecutive nodes: one step fewer than nodes
            step_node.append(slot[parent])
            step_token.append(tree.tokens[child])
            step_member.append(m)
    return _TreePlan(
        members=tree.members,
        tokens=torch.tensor([tree.tokens[n] for n in running], dtype=torch.long),
        depths=torch.tensor([tree.depths[n] for n in running], dtype=torch.long),
        sees=sees,
        firsts=torch.tensor([tree.tokens[path[0]] for path in tree.paths], dtype=torch.long),
        step_node=torch.tensor(step_node, dtype=torch.long),
        step_token=torch.tensor(step_token, dtype=torch.long),
        step_member=torch.tensor(step_member, dtype=torch.long),
    )


def _score_tree_rows(
    model, cache_kw, rows, head_cache, head_mask, lengths, last_lp, temperature, pad_id, device, tree_masks
):
    """Per (prompt row ``g``, tree plan) of ``rows``: the summed log-prob of each of the tree's members."""
    import torch

    chosen = [plan for _, plan in rows]
    sizes = [len(p.tokens) for p in chosen]
    members = torch.tensor([len(p.firsts) for p in chosen], dtype=torch.long)
    index = torch.tensor([g for g, _ in rows], dtype=torch.long)
    # every member's total starts at its first token under its prompt (the prompt pass's last position)
    totals = last_lp[
        index.to(device).repeat_interleave(members.to(device)), torch.cat([p.firsts for p in chosen]).to(device)
    ]
    totals = totals.double()
    width = max(sizes)
    if width == 0:  # one-token texts only: nothing to run
        return _split(totals.cpu().tolist(), members.tolist())
    node_ids = torch.full((len(rows), width), pad_id, dtype=torch.long)
    depths = torch.zeros((len(rows), width), dtype=torch.long)
    sees = torch.eye(width, dtype=torch.bool).repeat(len(rows), 1, 1)  # padding nodes see themselves only
    for b, (plan, n) in enumerate(zip(chosen, sizes, strict=True)):
        node_ids[b, :n] = plan.tokens
        depths[b, :n] = plan.depths
        sees[b, :n, :n] = plan.sees
    index, node_ids, depths, sees = index.to(device), node_ids.to(device), depths.to(device), sees.to(device)
    if tree_masks:
        dtype = next(model.parameters()).dtype
        allowed = torch.cat([head_mask[index].bool()[:, None, :].expand(-1, width, -1), sees], dim=-1)  # (R, W, P+W)
        mask = torch.zeros(allowed.shape, dtype=dtype, device=device).masked_fill(~allowed, torch.finfo(dtype).min)
        mask = mask[:, None]  # (R, 1, W, P+W): a custom 4D mask is used as given
    else:  # every tree is one text, a chain: the model's own causal mask over [prompt | text] padding
        text_mask = (torch.arange(width)[None, :] < torch.tensor(sizes)[:, None]).to(head_mask.dtype).to(device)
        mask = torch.cat([head_mask[index], text_mask], dim=1)
    cache = select_cache(head_cache, index)
    logits = model(
        input_ids=node_ids,
        attention_mask=mask,
        position_ids=lengths[index][:, None] + depths,
        use_cache=True,
        **{cache_kw: cache},
    ).logits  # (R, W, V)
    logp = scaled_logprobs(logits, temperature)  # running node n's distribution of its children's tokens
    # then each parent -> child step along every member's path, added to that member's total
    steps = torch.tensor([len(p.step_node) for p in chosen], dtype=torch.long)
    step_row = torch.arange(len(rows)).repeat_interleave(steps)
    first_member = members.cumsum(0) - members  # each row's first slot in totals
    step_slot = torch.cat([p.step_member for p in chosen]) + first_member.repeat_interleave(steps)
    values = logp[
        step_row.to(device), torch.cat([p.step_node for p in chosen]).to(device),
        torch.cat([p.step_token for p in chosen]).to(device),
    ].double()  # fmt: skip
    totals = totals.index_add(0, step_slot.to(device), values)
    return _split(totals.cpu().tolist(), members.tolist())


def _split(values: list, sizes: list[int]) -> list[list]:
    out, at = [], 0
    for size in sizes:
        out.append(values[at : at + size])
        at += size
    return out
