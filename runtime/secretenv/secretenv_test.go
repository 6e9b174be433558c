package secretenv_test

import (
	"slices"
	"testing"

	"github.com/openprogram/openprogram/runtime/secretenv"
)

func TestValidName(t *testing.T) {
	long := string(make([]byte, secretenv.MaxNameLen+1))
	for s, want := range map[string]bool{
		"OPENAI_API_KEY": true, "_x": true, "a1": true, "x": true,
		"": false, "1ABC": false, "A-B": false, "A B": false, "sk-abc123": false, long: false,
	} {
		if got := secretenv.ValidName(s); got != want {
			t.Errorf("ValidName(%q) = %v, want %v", s, got, want)
		}
	}
}

func TestListStrip(t *testing.T) {
	l := secretenv.New("MY_TOKEN", "", "my_token")
	if got := l.Names(); !slices.Contains(got, "MY_TOKEN") || len(got) != len(secretenv.Fixed())+1 {
		t.Errorf("Names() = %v, want the fixed names and MY_TOKEN once", got)
	}
	env := []string{"PATH=/bin", "MY_TOKEN=a", "my_token=b", "PGPASSWORD=c", "PGPASSFILE=d", "OPENPROGRAM_MCP_TOKEN=e",
		"OPENPROGRAM_DATABASE_URL=f", "OPENAI_API_KEY=g", "ANTHROPIC_API_KEY=h", "Other_Api_Key=i", "NOEQUALS", "HOME=/h"}
	got := l.Strip(env)
	if want := []string{"PATH=/bin", "HOME=/h"}; !slices.Equal(got, want) {
		t.Errorf("Strip = %v, want %v", got, want)
	}
	var zero secretenv.List
	if got := zero.Strip([]string{"PGPASSWORD=x", "MY_TOKEN=y"}); !slices.Equal(got, []string{"MY_TOKEN=y"}) {
		t.Errorf("zero List Strip = %v, want the fixed names gone and nothing else", got)
	}
}
