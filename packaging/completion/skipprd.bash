# bash completion for skipprd: commands, their options, the pipelines of skippr.yml and the control statements.
# Installed to /usr/share/bash-completion/completions/skipprd.

_skipprd_pipelines() {
  # The keys under `pipelines:` of --config, $SKIPPR_CONFIG_FILE or ./skippr.yml (two-space indented, as written).
  local file="${SKIPPR_CONFIG_FILE:-skippr.yml}" i
  for ((i = 1; i < ${#COMP_WORDS[@]} - 1; i++)); do
    [[ ${COMP_WORDS[i]} == --config ]] && file="${COMP_WORDS[i + 1]}"
  done
  [[ -r $file ]] || return 0
  awk '/^pipelines:/ { inside = 1; next } /^[^ #]/ { inside = 0 }
       inside && /^  [A-Za-z0-9_.-]+:/ { sub(/^  /, ""); sub(/:.*/, ""); print }' "$file"
}

_skipprd() {
  local cur="${COMP_WORDS[COMP_CWORD]}" prev="${COMP_WORDS[COMP_CWORD - 1]}"
  local commands="sync serve query validate connectors wal replica promote help"
  local command="" i
  for ((i = 1; i < COMP_CWORD; i++)); do
    case "${COMP_WORDS[i]}" in
      -*) ;;
      *) command="${COMP_WORDS[i]}"; break ;;
    esac
  done
  case "$prev" in
    --pipeline) COMPREPLY=($(compgen -W "$(_skipprd_pipelines)" -- "$cur")); return ;;
    --config) COMPREPLY=($(compgen -f -- "$cur")); return ;;
    --output) COMPREPLY=($(compgen -W "progress json text" -- "$cur")); return ;;
    --log) COMPREPLY=($(compgen -W "trace debug info warn error off" -- "$cur")); return ;;
    --sql)
      COMPREPLY=($(compgen -W "'SHOW PIPELINES' 'SHOW PIPELINE ' 'SHOW STATS FOR ' 'RESET PIPELINE ' 'ENABLE PIPELINE ' 'DISABLE PIPELINE '" -- "$cur"))
      return ;;
  esac
  case "$command" in
    "") COMPREPLY=($(compgen -W "$commands --help --version" -- "$cur")) ;;
    sync) COMPREPLY=($(compgen -W "--pipeline --once --log --output --config" -- "$cur")) ;;
    query) COMPREPLY=($(compgen -W "--sql --config --output" -- "$cur")) ;;
    validate) COMPREPLY=($(compgen -W "--config" -- "$cur")) ;;
    wal) COMPREPLY=($(compgen -W "inspect --pipeline --output" -- "$cur")) ;;
    replica) COMPREPLY=($(compgen -W "--listen --insecure" -- "$cur")) ;;
    serve) COMPREPLY=($(compgen -W "--listen --config" -- "$cur")) ;;
    promote) COMPREPLY=($(compgen -W "--pipeline" -- "$cur")) ;;
    help) COMPREPLY=($(compgen -W "$commands" -- "$cur")) ;;
  esac
}
complete -F _skipprd skipprd
