package capturerun

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Client calls a capture proxy's admin interface (Handler).
type Client struct {
	// Addr is the admin interface's host:port, or an http:// or
	// https:// URL. A bare ":port" is loopback.
	Addr string
	// Token is sent as a bearer token when not empty.
	Token string
	// HTTP is the client used; nil means one with a 30-second timeout.
	HTTP *http.Client
}

// AdminError is an answer of the admin interface other than success.
type AdminError struct {
	// Code is the HTTP status.
	Code int
	// Message is the interface's error text.
	Message string
	// ID is the recording under way, for a start refused (409).
	ID string
}

func (e *AdminError) Error() string {
	return fmt.Sprintf("admin interface: %s (HTTP %d)", e.Message, e.Code)
}

// Unwrap makes a 409 an ErrBusy, and the other refusals what they are.
func (e *AdminError) Unwrap() error {
	switch e.Code {
	case http.StatusConflict:
		return ErrBusy
	case http.StatusNotFound:
		return ErrUnknownRecording
	case http.StatusServiceUnavailable:
		return ErrShuttingDown
	}
	return nil
}

// Start starts a recording.
func (c *Client) Start(ctx context.Context, req StartRequest) (Status, error) {
	var st Status
	err := c.call(ctx, http.MethodPost, "/recordings", req, http.StatusCreated, &st)
	return st, err
}

// Stop finalizes the recording id and returns its status.
func (c *Client) Stop(ctx context.Context, id string) (Status, error) {
	var st Status
	err := c.call(ctx, http.MethodPost, "/recordings/"+url.PathEscape(id)+"/stop", nil, http.StatusOK, &st)
	return st, err
}

// List returns the proxy's recordings.
func (c *Client) List(ctx context.Context) (List, error) {
	var l List
	err := c.call(ctx, http.MethodGet, "/recordings", nil, http.StatusOK, &l)
	return l, err
}

func (c *Client) base() string {
	a := c.Addr
	if strings.HasPrefix(a, "http://") || strings.HasPrefix(a, "https://") {
		return strings.TrimSuffix(a, "/")
	}
	if strings.HasPrefix(a, ":") {
		a = "127.0.0.1" + a
	}
	return "http://" + a
}

func (c *Client) call(ctx context.Context, method, path string, body any, want int, out any) error {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base()+path, rd)
	if err != nil {
		return err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.Token != "" {
		req.Header.Set("Authorization", "Bearer "+c.Token)
	}
	hc := c.HTTP
	if hc == nil {
		hc = &http.Client{Timeout: 30 * time.Second}
	}
	resp, err := hc.Do(req)
	if err != nil {
		return fmt.Errorf("admin interface: %w", err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return fmt.Errorf("admin interface: %w", err)
	}
	if resp.StatusCode != want {
		var eb ErrorBody
		if json.Unmarshal(b, &eb) != nil || eb.Error == "" {
			eb.Error = strings.TrimSpace(string(b))
		}
		return &AdminError{Code: resp.StatusCode, Message: eb.Error, ID: eb.ID}
	}
	if err := json.Unmarshal(b, out); err != nil {
		return fmt.Errorf("admin interface: the answer is not what pgrehearse expects: %w", err)
	}
	return nil
}
