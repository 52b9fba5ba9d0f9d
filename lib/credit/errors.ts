// The one error a bad credit request produces, in its own file so that statistics code deep in an
// estimator (stats.ts) can raise it without importing the request module (an import cycle).

/** A bad request; `message` is one line naming the problem and the field path. */
export class CreditRequestError extends Error {
  constructor(
    message: string,
    /** Field path, e.g. "groups[0].trajectories[1].turns[2].reward" ("" for the whole request). */
    readonly path: string = "",
  ) {
    super(message.replace(/\s*\n\s*/g, " "));
    this.name = "CreditRequestError";
  }
}
