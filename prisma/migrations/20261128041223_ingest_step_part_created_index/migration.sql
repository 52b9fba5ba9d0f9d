-- CreateIndex
CREATE INDEX "IngestStepPart_runId_step_createdAt_idx" ON "IngestStepPart"("runId", "step", "createdAt");
