// Command pulumi-language-go is a small Go language host for the Pulumi engine.
//
// The upstream host (github.com/pulumi/pulumi/sdk/go/pulumi-language-go/v3) is not served by the
// Go module registry this project's machines can reach, so, as for Python and Node.js
// (scripts/pulumi-nodejs-host), this is our own: the part of the LanguageRuntime service that
// `pulumi preview/up/refresh/destroy` need for a Go program. Run builds the program (`go build`
// in its directory, or takes the prebuilt `binary` runtime option) and starts it with the
// engine's settings in the environment variables the Go SDK's pulumi.Run reads (PULUMI_MONITOR,
// PULUMI_ENGINE, PULUMI_PROJECT, PULUMI_STACK, PULUMI_CONFIG, ...). Everything else answers
// Unimplemented or nothing (plugins load on demand; no code generation).
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

// loggedErrorExitCode is what pulumi.Run exits with after it reported the program's error.
const loggedErrorExitCode = 32

type host struct {
	pulumirpc.UnimplementedLanguageRuntimeServer

	mu            sync.Mutex
	engineAddress string
}

func main() {
	h := &host{}
	for _, arg := range os.Args[1:] {
		if !strings.HasPrefix(arg, "-") {
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
		fmt.Fprintf(os.Stderr, "pulumi-language-go: could not start the gRPC server: %v\n", err)
		os.Exit(1)
	}
	fmt.Printf("%d\n", handle.Port)
	if err := <-handle.Done; err != nil {
		fmt.Fprintf(os.Stderr, "pulumi-language-go: %v\n", err)
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
	h.mu.Lock()
	engine := h.engineAddress
	h.mu.Unlock()
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
	cmd := exec.CommandContext(ctx, binary, req.GetArgs()...)
	cmd.Env = append(os.Environ(),
		"PULUMI_MONITOR="+req.GetMonitorAddress(),
		"PULUMI_ENGINE="+engine,
		"PULUMI_ORGANIZATION="+req.GetOrganization(),
		"PULUMI_PROJECT="+req.GetProject(),
		"PULUMI_STACK="+req.GetStack(),
		"PULUMI_ROOT_DIRECTORY="+info.GetRootDirectory(),
		"PULUMI_CONFIG="+string(config),
		"PULUMI_CONFIG_SECRET_KEYS="+string(secrets),
		"PULUMI_DRY_RUN="+strconv.FormatBool(req.GetDryRun()),
		"PULUMI_PARALLEL="+strconv.Itoa(int(req.GetParallel())),
	)
	cmd.Dir = req.GetPwd()
	cmd.Stdout = os.Stdout
	cmd.Stderr = os.Stderr
	if err := cmd.Run(); err != nil {
		var exitErr *exec.ExitError
		if errors.As(err, &exitErr) {
			if exitErr.ExitCode() == loggedErrorExitCode {
				return &pulumirpc.RunResponse{Bail: true}, nil
			}
			return &pulumirpc.RunResponse{
				Error: fmt.Sprintf("Program exited with non-zero exit code: %d", exitErr.ExitCode()),
			}, nil
		}
		return &pulumirpc.RunResponse{Error: fmt.Sprintf("could not run the program: %v", err)}, nil
	}
	return &pulumirpc.RunResponse{}, nil
}
