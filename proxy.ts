// Pages get the same Host allowlist and read token as the API (lib/api/route.ts enforces both for
// /api itself; the proxy stays off /api because it would buffer request bodies). With a token
// configured, `?token=…` on any page stores it in an HttpOnly SameSite=Strict cookie, which the
// dashboard's own API calls then carry.
import { NextResponse, type NextRequest } from "next/server";
import { hostAllowed, MIN_TOKEN_LENGTH, securityConfig, TOKEN_COOKIE, tokenAllows } from "./lib/api/security";

export function proxy(req: NextRequest) {
  let cfg: ReturnType<typeof securityConfig>;
  try {
    cfg = securityConfig();
  } catch (e) {
    return new NextResponse(`TurnLens is misconfigured: ${(e as Error).message}\n`, { status: 500, headers: { "content-type": "text/plain" } });
  }
  if (!hostAllowed(req.headers.get("host"), cfg))
    return new NextResponse("Host not allowed; add it to TURNLENS_ALLOWED_HOSTS\n", { status: 403, headers: { "content-type": "text/plain" } });
  const given = req.nextUrl.searchParams.get("token");
  if (given !== null) {
    const url = req.nextUrl.clone();
    url.searchParams.delete("token");
    const res = NextResponse.redirect(url, 303);
    res.cookies.set(TOKEN_COOKIE, given, { httpOnly: true, sameSite: "strict", path: "/", secure: req.nextUrl.protocol === "https:" });
    return res;
  }
  if (!tokenAllows(req.headers, "read", cfg)) {
    const html = `<!doctype html><meta charset="utf-8"><title>TurnLens: token needed</title>
<body style="font-family:system-ui;max-width:32rem;margin:4rem auto;color:#1f2937">
<h1 style="font-size:1.25rem">This TurnLens needs a token</h1>
<p>The server has <code>TURNLENS_READ_TOKEN</code> set. Paste the read token (or the API token, which also allows launching runs).</p>
<form method="get"><input name="token" type="password" minlength="${MIN_TOKEN_LENGTH}" required style="width:100%;padding:.5rem" autofocus>
<button style="margin-top:.5rem;padding:.4rem 1rem">Open</button></form></body>`;
    return new NextResponse(html, { status: 401, headers: { "content-type": "text/html; charset=utf-8" } });
  }
  return NextResponse.next();
}

export const config = {
  // every page; not /api (checked by its own wrapper), not Next's static files
  matcher: ["/((?!api/|_next/static|_next/image|favicon.ico).*)"],
};
