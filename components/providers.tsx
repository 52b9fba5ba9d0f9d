"use client";
import { QueryClient, QueryClientProvider } from "@tanstack/react-query";
import { useState, type ReactNode } from "react";
import { ApiClientError } from "@/lib/client/api";

/** Retry network and server failures, never a 4xx: a missing run stays missing (no 7 s of retries). */
const retry = (count: number, err: unknown) => !(err instanceof ApiClientError && err.status >= 400 && err.status < 500) && count < 3;

export function Providers({ children }: { children: ReactNode }) {
  const [client] = useState(() => new QueryClient({ defaultOptions: { queries: { staleTime: 1000, refetchOnWindowFocus: false, retry } } }));
  return <QueryClientProvider client={client}>{children}</QueryClientProvider>;
}
