// Broadcasting turn advantages onto response tokens (lib/credit/README.md, "Library pieces").

/**
 * Spread per-turn advantages over a token sequence.
 *
 * Args:
 *   turnAdvantages: (T,) advantage of each turn of one trajectory.
 *   tokenTurnIndex: (L,) for every token, the index of the turn whose response it belongs to,
 *     or -1 for observation / prompt / padding tokens.
 * Returns:
 *   (L,) Float32Array: the turn's advantage on each of its response tokens, 0 elsewhere.
 * Throws: RangeError when an index is >= T or below -1 (a silent 0 would hide an off-by-one).
 */
export function broadcastToTokens(turnAdvantages: number[], tokenTurnIndex: Int32Array | number[]): Float32Array {
  const L = tokenTurnIndex.length;
  const T = turnAdvantages.length;
  const out = new Float32Array(L);
  for (let j = 0; j < L; j++) {
    const t = tokenTurnIndex[j];
    if (t === -1) continue;
    if (!(t >= 0 && t < T) || !Number.isInteger(t)) {
      throw new RangeError(`tokenTurnIndex[${j}] = ${t} is not a turn index in [0, ${T}) or -1`);
    }
    out[j] = turnAdvantages[t];
  }
  return out;
}
