// Command pulumi-language-go is a small Go language host for the Pulumi engine.
//
// The upstream host (github.com/pulumi/pulumi/sdk/go/pulumi-language-go/v3) is not served by the
// Go module registry this project's machines can reach, so, as for Python and Node.js
// (scripts/pulumi-nodejs-host), this is our own: the part of the LanguageRuntime service that
// `pulumi preview/up/refresh/destroy` need for a Go program. Run builds the program (`go build`
// in its directory, or takes the prebuilt `binary` runtime option) and starts it with the
// engine's settings in the environment variables the Go SDK's pulumi.Run reads (PULUMI_MONITOR,
// PULUMI_ENGINE, PULUMI_PROJECT, PULUMI_STACK, PULUMI_CONFIG, ...). The serve loop and the RPCs
// it answers as the Node.js host does are shared (scripts/pulumi-host-serve), GenerateProgram too
// (codegen.go: the Go code `pulumi import --out FILE.go` writes, by pkg/v3's codegen/go);
// everything else answers Unimplemented.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"

	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"google.golang.org/protobuf/types/known/structpb"

	hostserve "gpu-training.local/pulumi-host-serve"
)

type host struct {
	hostserve.Base
}

func main() {
	hostserve.Main("pulumi-language-go", &host{})
}

func stringOption(info *pulumirpc.ProgramInfo, name string) string {
	if v, ok := info.GetOptions().GetFields()[name]; ok {
		if s, ok := v.GetKind().(*structpb.Value_StringValue); ok {
			return s.StringValue
		}
	}
	return ""
}

// program answers the executable to run: the `binary` option's (relative to the project), else
// the program directory built with `go build` into dir.
func program(ctx context.Context, info *pulumirpc.ProgramInfo, dir string) (string, error) {
	if binary := stringOption(info, "binary"); binary != "" {
		if !filepath.IsAbs(binary) {
			binary = filepath.Join(info.GetRootDirectory(), binary)
		}
		return binary, nil
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		return "", errors.New("go was not found on PATH (needed to build the program)")
	}
	out := filepath.Join(dir, "pulumi-go-program")
	cmd := exec.CommandContext(ctx, goBin, "build", "-o", out, ".")
	cmd.Dir = info.GetProgramDirectory()
	output, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("go build of the program failed: %v\n%s", err, output)
	}
	return out, nil
}

func (h *host) Run(ctx context.Context, req *pulumirpc.RunRequest) (*pulumirpc.RunResponse, error) {
	info := req.GetInfo()
	if info == nil {
		info = &pulumirpc.ProgramInfo{RootDirectory: req.GetPwd(), ProgramDirectory: req.GetPwd()}
	}
	if info.GetProgramDirectory() == "" {
		info.ProgramDirectory = req.GetPwd()
	}
	work, err := os.MkdirTemp("", "pulumi-go-program-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(work)
	binary, err := program(ctx, info, work)
	if err != nil {
		return &pulumirpc.RunResponse{Error: err.Error()}, nil
	}
	configEnv, err := hostserve.ConfigEnv(req)
	if err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, binary, req.GetArgs()...)
	cmd.Env = append(append(os.Environ(), configEnv...),
		"PULUMI_MONITOR="+req.GetMonitorAddress(),
		"PULUMI_ENGINE="+h.EngineAddress(),
		"PULUMI_ORGANIZATION="+req.GetOrganization(),
		"PULUMI_PROJECT="+req.GetProject(),
		"PULUMI_STACK="+req.GetStack(),
		"PULUMI_ROOT_DIRECTORY="+info.GetRootDirectory(),
		"PULUMI_DRY_RUN="+strconv.FormatBool(req.GetDryRun()),
		"PULUMI_PARALLEL="+strconv.Itoa(int(req.GetParallel())),
	)
	cmd.Dir = req.GetPwd()
	return hostserve.RunCommand(cmd, "the program"), nil
}
