// Package hostserve is what our small language hosts (scripts/pulumi-wrapper's
// pulumi-language-python, scripts/pulumi-go-host, scripts/pulumi-nodejs-host) share: the gRPC
// serve loop the engine expects of a language host, the LanguageRuntime RPCs they answer alike,
// and how a Run passes the stack config to the program and reads its exit.
package hostserve

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"

	"github.com/pulumi/pulumi/sdk/v3/go/common/util/rpcutil"
	"github.com/pulumi/pulumi/sdk/v3/go/common/version"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/emptypb"
)

// bailExitCode is what a program (pulumi.Run, @pulumi/pulumi's cmd/run) exits with after it
// already reported its error to the engine.
const bailExitCode = 32

// Base answers Handshake, GetPluginInfo, GetRequiredPlugins/GetRequiredPackages (none: plugins
// load on demand) and Cancel, and Unimplemented for what neither host serves; a host embeds it.
type Base struct {
	pulumirpc.UnimplementedLanguageRuntimeServer

	mu            sync.Mutex
	engineAddress string
}

// EngineAddress is the engine's gRPC address: from the command line, or the latest Handshake.
func (b *Base) EngineAddress() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.engineAddress
}

// Handshake keeps the engine address the engine gives (newer engines pass it here, not as an
// argument).
func (b *Base) Handshake(
	_ context.Context, req *pulumirpc.LanguageHandshakeRequest,
) (*pulumirpc.LanguageHandshakeResponse, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if req.GetEngineAddress() != "" {
		b.engineAddress = req.GetEngineAddress()
	}
	return &pulumirpc.LanguageHandshakeResponse{}, nil
}

// GetPluginInfo answers the SDK version the host is built with.
func (b *Base) GetPluginInfo(context.Context, *emptypb.Empty) (*pulumirpc.PluginInfo, error) {
	return &pulumirpc.PluginInfo{Version: version.Version}, nil
}

// GetRequiredPlugins answers none: the engine loads plugins when the program asks for them.
func (b *Base) GetRequiredPlugins(
	context.Context, *pulumirpc.GetRequiredPluginsRequest,
) (*pulumirpc.GetRequiredPluginsResponse, error) {
	return &pulumirpc.GetRequiredPluginsResponse{}, nil
}

// GetRequiredPackages answers none, as GetRequiredPlugins.
func (b *Base) GetRequiredPackages(
	context.Context, *pulumirpc.GetRequiredPackagesRequest,
) (*pulumirpc.GetRequiredPackagesResponse, error) {
	return &pulumirpc.GetRequiredPackagesResponse{}, nil
}

// Cancel has nothing to stop: a Run ends with its request's context.
func (b *Base) Cancel(context.Context, *emptypb.Empty) (*emptypb.Empty, error) {
	return &emptypb.Empty{}, nil
}

// Runtime is a host's LanguageRuntime server, built on an embedded Base.
type Runtime interface {
	pulumirpc.LanguageRuntimeServer
	base() *Base
}

func (b *Base) base() *Base { return b }

// Main serves runtime as the engine starts a language host, `<name> [flags] <engine-address>`
// (flags are the host's own to read): it prints the port it listens on, on one line, and serves
// until the engine closes the host's stdin or stops answering its health check. It exits with
// the error, under name, when serving fails.
func Main(name string, runtime Runtime) {
	b := runtime.base()
	for _, arg := range os.Args[1:] {
		if !strings.HasPrefix(arg, "-") {
			b.engineAddress = arg
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
	if address := b.EngineAddress(); address != "" {
		ctx, cancel := context.WithCancel(context.Background())
		if err := rpcutil.Healthcheck(ctx, address, time.Minute, cancel); err == nil {
			go func() { <-ctx.Done(); engineGone() }()
		}
	}
	handle, err := rpcutil.ServeWithOptions(rpcutil.ServeOptions{
		Init: func(s *grpc.Server) error {
			pulumirpc.RegisterLanguageRuntimeServer(s, runtime)
			return nil
		},
		Cancel: stop,
	})
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: could not start the gRPC server: %v\n", name, err)
		os.Exit(1)
	}
	fmt.Printf("%d\n", handle.Port)
	if err := <-handle.Done; err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", name, err)
		os.Exit(1)
	}
}

// ConfigEnv answers the environment entries that give the program the stack config:
// PULUMI_CONFIG and PULUMI_CONFIG_SECRET_KEYS (JSON, as both SDKs read them).
func ConfigEnv(req *pulumirpc.RunRequest) ([]string, error) {
	values := req.GetConfig()
	if values == nil { // a stack without config: `{}`, not `null`, which the SDKs cannot read
		values = map[string]string{}
	}
	config, err := json.Marshal(values)
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
	return []string{"PULUMI_CONFIG=" + string(config), "PULUMI_CONFIG_SECRET_KEYS=" + string(secrets)}, nil
}

// RunCommand runs cmd, the program, with the host's stdout and stderr, and answers its outcome
// as the engine reads it: a bail when the program already reported its error, else the exit
// code; what names the command in the error when it could not start.
func RunCommand(cmd *exec.Cmd, what string) *pulumirpc.RunResponse {
	cmd.Stdout = os.Stdout
	cmd.Stderr = os.Stderr
	err := cmd.Run()
	if err == nil {
		return &pulumirpc.RunResponse{}
	}
	var exitErr *exec.ExitError
	if !errors.As(err, &exitErr) {
		return &pulumirpc.RunResponse{Error: fmt.Sprintf("could not run %s: %v", what, err)}
	}
	if exitErr.ExitCode() == bailExitCode {
		return &pulumirpc.RunResponse{Bail: true}
	}
	return &pulumirpc.RunResponse{
		Error: fmt.Sprintf("Program exited with non-zero exit code: %d", exitErr.ExitCode()),
	}
}
