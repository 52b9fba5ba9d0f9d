import type { NextConfig } from "next";

const nextConfig: NextConfig = {
  // Native modules load from node_modules at run time instead of being bundled.
  serverExternalPackages: ["better-sqlite3", "onnxruntime-node", "libpq", "pg"],
  poweredByHeader: false,
  // No gzip in the server: on a local-first dashboard it cost 1.4 s of a 4.3 s full metric export and
  // a few ms on every API answer; a reverse proxy in front of a shared deployment compresses instead.
  compress: false,
};

export default nextConfig;
