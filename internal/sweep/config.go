package sweep

import (
	"fmt"
	"regexp"
	"sort"
	"strings"
)

// Config is a named set of server settings to sweep under.
type Config struct {
	Name     string
	Settings map[string]string
}

var (
	configName  = regexp.MustCompile(`^[A-Za-z0-9_.-]+$`)
	settingName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)?$`)
)

// ParseConfig parses "NAME:setting=value[,setting=value...]". A piece
// without "=" continues the previous value, so that list values such as
// "search_path=a,b" survive. Values are unquoted, as SHOW prints them.
func ParseConfig(s string) (Config, error) {
	name, rest, ok := strings.Cut(s, ":")
	name = strings.TrimSpace(name)
	if !ok || !configName.MatchString(name) {
		return Config{}, fmt.Errorf("configuration %q: want NAME:setting=value[,setting=value], with NAME of letters, digits, '_', '.' or '-'", s)
	}
	c := Config{Name: name, Settings: map[string]string{}}
	var last string
	for _, piece := range strings.Split(rest, ",") {
		k, v, hasEq := strings.Cut(piece, "=")
		k = strings.TrimSpace(k)
		if !hasEq || !settingName.MatchString(k) {
			if last == "" {
				if strings.TrimSpace(piece) == "" && rest == "" {
					break // "NAME:" alone: the server's defaults
				}
				return Config{}, fmt.Errorf("configuration %q: %q is not setting=value", s, piece)
			}
			c.Settings[last] += "," + piece
			continue
		}
		if _, dup := c.Settings[k]; dup {
			return Config{}, fmt.Errorf("configuration %q: %s given twice", s, k)
		}
		c.Settings[k] = strings.TrimSpace(v)
		last = k
	}
	return c, nil
}

// String renders the configuration as ParseConfig reads it, settings
// sorted by name.
func (c Config) String() string {
	return c.Name + ":" + SettingsString(c.Settings)
}

// SettingsString writes settings as ParseConfig reads them, sorted by
// name: "a=1,b=2".
func SettingsString(m map[string]string) string {
	names := make([]string, 0, len(m))
	for k := range m {
		names = append(names, k)
	}
	sort.Strings(names)
	parts := make([]string, len(names))
	for i, k := range names {
		parts[i] = k + "=" + m[k]
	}
	return strings.Join(parts, ",")
}

// settingNames returns the union of the configurations' setting names,
// sorted.
func settingNames(configs []Config) []string {
	seen := map[string]bool{}
	var names []string
	for _, c := range configs {
		for k := range c.Settings {
			if !seen[k] {
				seen[k] = true
				names = append(names, k)
			}
		}
	}
	sort.Strings(names)
	return names
}
