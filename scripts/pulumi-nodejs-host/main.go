// Command pulumi-language-nodejs is a small Node.js language host for the Pulumi engine.
//
// The upstream host (github.com/pulumi/pulumi/sdk/nodejs/cmd/pulumi-language-nodejs) is not served
// by the Go module registry this project's machines can reach, so, as for Python
// (scripts/pulumi-wrapper/pulumi-language-python), this is our own: the part of the
// LanguageRuntime service that `pulumi preview/up/refresh/destroy/import` need for a Node.js or
// TypeScript program. Run starts `node <@pulumi/pulumi>/cmd/run` (the npm package's own program
// runner, resolved from the program's node_modules) with the engine's arguments and the stack
// config in PULUMI_CONFIG; TypeScript is compiled by the SDK's bundled ts-node unless the
// project's `typescript` runtime option is false. GenerateProgram (codegen.go) writes TypeScript
// with pkg/v3's codegen/nodejs, so `pulumi import` prints the code of what it imported. The serve
// loop and the RPCs it answers as the Go host does are shared (scripts/pulumi-host-serve);
// everything else answers Unimplemented.
package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"

	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"google.golang.org/protobuf/types/known/structpb"

	hostserve "gpu-training.local/pulumi-host-serve"
)

type host struct {
	hostserve.Base

	tracing string
}

func main() {
	h := &host{}
	for _, arg := range os.Args[1:] {
		if strings.HasPrefix(arg, "-tracing=") || strings.HasPrefix(arg, "--tracing=") {
			h.tracing = arg[strings.Index(arg, "=")+1:]
		}
	}
	hostserve.Main("pulumi-language-nodejs", h)
}

// runner finds @pulumi/pulumi's cmd/run from the program directory upwards, as Node resolves it.
func runner(dir string) (string, error) {
	for d := dir; ; d = filepath.Dir(d) {
		candidate := filepath.Join(d, "node_modules", "@pulumi", "pulumi", "cmd", "run")
		if st, err := os.Stat(filepath.Join(candidate, "index.js")); err == nil && !st.IsDir() {
			return candidate, nil
		}
		if filepath.Dir(d) == d {
			return "", fmt.Errorf("@pulumi/pulumi is not installed for %s: run npm install", dir)
		}
	}
}

func boolOption(info *pulumirpc.ProgramInfo, name string, fallback bool) bool {
	v, ok := info.GetOptions().GetFields()[name]
	if !ok {
		return fallback
	}
	if b, ok := v.GetKind().(*structpb.Value_BoolValue); ok {
		return b.BoolValue
	}
	return fallback
}

func (h *host) Run(ctx context.Context, req *pulumirpc.RunRequest) (*pulumirpc.RunResponse, error) {
	info := req.GetInfo()
	if info == nil {
		info = &pulumirpc.ProgramInfo{RootDirectory: req.GetPwd(), ProgramDirectory: req.GetPwd()}
	}
	programDir := info.GetProgramDirectory()
	if programDir == "" {
		programDir = req.GetPwd()
	}
	run, err := runner(programDir)
	if err != nil {
		return &pulumirpc.RunResponse{Error: err.Error()}, nil
	}
	node, err := exec.LookPath("node")
	if err != nil {
		return &pulumirpc.RunResponse{Error: "node was not found on PATH"}, nil
	}
	args := []string{
		run,
		"--monitor", req.GetMonitorAddress(),
		"--engine", h.EngineAddress(),
		"--project", req.GetProject(),
		"--stack", req.GetStack(),
		"--pwd", req.GetPwd(),
		"--parallel", strconv.Itoa(int(req.GetParallel())),
		"--organization", req.GetOrganization(),
		"--root-directory", info.GetRootDirectory(),
	}
	if req.GetDryRun() {
		args = append(args, "--dry-run")
	}
	if h.tracing != "" {
		args = append(args, "--tracing", h.tracing)
	}
	program := req.GetProgram()
	if program == "" {
		program = "."
	}
	args = append(args, program)
	args = append(args, req.GetArgs()...)

	configEnv, err := hostserve.ConfigEnv(req)
	if err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, node, args...)
	cmd.Env = append(append(os.Environ(), configEnv...),
		"PULUMI_NODEJS_TYPESCRIPT="+strconv.FormatBool(boolOption(info, "typescript", true)),
	)
	cmd.Dir = req.GetPwd()
	return hostserve.RunCommand(cmd, "node"), nil
}
