package main

// GenerateProgram: the TypeScript code `pulumi import` prints (pkg/v3's codegen/nodejs, through
// scripts/pulumi-host-serve's GenerateProgram, shared with the Go and Python hosts).

import (
	"context"

	"github.com/pulumi/pulumi/pkg/v3/codegen/nodejs"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"

	hostserve "gpu-training.local/pulumi-host-serve"
)

func (h *host) GenerateProgram(
	_ context.Context, req *pulumirpc.GenerateProgramRequest,
) (*pulumirpc.GenerateProgramResponse, error) {
	return hostserve.GenerateProgram(req, nodejs.GenerateProgram)
}
