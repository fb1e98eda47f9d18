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
// with pkg/v3's codegen/nodejs, so `pulumi import` prints the code of what it imported. Everything
// else answers Unimplemented or nothing (plugins load on demand).
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/pulumi/pulumi/sdk/v3/go/common/util/rpcutil"
	"github.com/pulumi/pulumi/sdk/v3/go/common/version"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/emptypb"
	"google.golang.org/protobuf/types/known/structpb"
)

// bailExitCode is what the runner exits with after it already reported the program's error.
const bailExitCode = 32

type host struct {
	pulumirpc.UnimplementedLanguageRuntimeServer

	mu            sync.Mutex
	engineAddress string
	tracing       string
}

func main() {
	h := &host{}
	for _, arg := range os.Args[1:] {
		switch {
		case strings.HasPrefix(arg, "-tracing="), strings.HasPrefix(arg, "--tracing="):
			h.tracing = arg[strings.Index(arg, "=")+1:]
		case strings.HasPrefix(arg, "-"):
		default:
			h.engineAddress = arg
		}
	}
	stop := make(chan bool)
	var stopOnce sync.Once
	engineGone := func() { stopOnce.Do(func() { close(stop) }) }
	if info, err := os.Stdin.Stat(); err == nil && info.Mode()&os.ModeNamedPipe != 0 {
		go func() {
			_, _ = io.Copy(io.Discard, os.Stdin)
			engineGone()
		}()
	}
	if h.engineAddress != "" {
		ctx, cancel := context.WithCancel(context.Background())
		if err := rpcutil.Healthcheck(ctx, h.engineAddress, time.Minute, cancel); err == nil {
			go func() { <-ctx.Done(); engineGone() }()
		}
	}
	handle, err := rpcutil.ServeWithOptions(rpcutil.ServeOptions{
		Init: func(s *grpc.Server) error {
			pulumirpc.RegisterLanguageRuntimeServer(s, h)
			return nil
		},
		Cancel: stop,
	})
	if err != nil {
		fmt.Fprintf(os.Stderr, "pulumi-language-nodejs: could not start the gRPC server: %v\n", err)
		os.Exit(1)
	}
	fmt.Printf("%d\n", handle.Port)
	if err := <-handle.Done; err != nil {
		fmt.Fprintf(os.Stderr, "pulumi-language-nodejs: %v\n", err)
		os.Exit(1)
	}
}

func (h *host) Handshake(
	_ context.Context, req *pulumirpc.LanguageHandshakeRequest,
) (*pulumirpc.LanguageHandshakeResponse, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if req.GetEngineAddress() != "" {
		h.engineAddress = req.GetEngineAddress()
	}
	return &pulumirpc.LanguageHandshakeResponse{}, nil
}

func (h *host) GetPluginInfo(context.Context, *emptypb.Empty) (*pulumirpc.PluginInfo, error) {
	return &pulumirpc.PluginInfo{Version: version.Version}, nil
}

func (h *host) GetRequiredPlugins(
	context.Context, *pulumirpc.GetRequiredPluginsRequest,
) (*pulumirpc.GetRequiredPluginsResponse, error) {
	return &pulumirpc.GetRequiredPluginsResponse{}, nil
}

func (h *host) GetRequiredPackages(
	context.Context, *pulumirpc.GetRequiredPackagesRequest,
) (*pulumirpc.GetRequiredPackagesResponse, error) {
	return &pulumirpc.GetRequiredPackagesResponse{}, nil
}

func (h *host) Cancel(context.Context, *emptypb.Empty) (*emptypb.Empty, error) {
	return &emptypb.Empty{}, nil
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
	h.mu.Lock()
	engine, tracing := h.engineAddress, h.tracing
	h.mu.Unlock()

	args := []string{
		run,
		"--monitor", req.GetMonitorAddress(),
		"--engine", engine,
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
	if tracing != "" {
		args = append(args, "--tracing", tracing)
	}
	program := req.GetProgram()
	if program == "" {
		program = "."
	}
	args = append(args, program)
	args = append(args, req.GetArgs()...)

	config, err := json.Marshal(req.GetConfig())
	if err != nil {
		return nil, err
	}
	secretKeys := req.GetConfigSecretKeys()
	if secretKeys == nil {
		secretKeys = []string{}
	}
	secrets, err := json.Marshal(secretKeys)
	if err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, node, args...)
	cmd.Env = append(os.Environ(),
		"PULUMI_CONFIG="+string(config),
		"PULUMI_CONFIG_SECRET_KEYS="+string(secrets),
		"PULUMI_NODEJS_TYPESCRIPT="+strconv.FormatBool(boolOption(info, "typescript", true)),
	)
	cmd.Dir = req.GetPwd()
	cmd.Stdout = os.Stdout
	cmd.Stderr = os.Stderr
	if err := cmd.Run(); err != nil {
		var exitErr *exec.ExitError
		if errors.As(err, &exitErr) {
			if exitErr.ExitCode() == bailExitCode {
				return &pulumirpc.RunResponse{Bail: true}, nil
			}
			return &pulumirpc.RunResponse{
				Error: fmt.Sprintf("Program exited with non-zero exit code: %d", exitErr.ExitCode()),
			}, nil
		}
		return &pulumirpc.RunResponse{Error: fmt.Sprintf("could not run node: %v", err)}, nil
	}
	return &pulumirpc.RunResponse{}, nil
}
