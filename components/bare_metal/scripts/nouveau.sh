#!/usr/bin/env bash
# nouveau.sh: keep the nouveau driver off the NVIDIA GPUs of a RHEL-family host.
#
# Why: nouveau binds the GPU first and nvidia.ko then cannot load. A modprobe.d blacklist only
# works at boot if the initramfs carries it too, hence the dracut rebuild.
#
# What it does, each part only when needed (safe to re-run):
#   1. writes /etc/modprobe.d/blacklist-nouveau.conf ("blacklist nouveau", "options nouveau
#      modeset=0");
#   2. rebuilds the initramfs of every installed kernel (dracut -f --regenerate-all) when that file
#      changed, or when an earlier run wrote it but its rebuild failed. --regenerate-all rather than
#      plain -f: a kernel installed by `dnf update` but not booted yet would otherwise keep an
#      initramfs without the blacklist and load nouveau at the next boot;
#   3. unloads nouveau if it is loaded now (best effort: a busy module means "reboot required");
#   4. adds the KERNEL_ARGS that are missing to every kernel with grubby (nothing when empty).
# It never reboots. reboot_required is read from the live host, so it stays true on later runs
# until someone reboots: nouveau still loaded, or a requested argument missing from /proc/cmdline.
#
# Inputs (environment):
#   KERNEL_ARGS             kernel arguments to add, space separated, name or name=value
#                           (default: none). Example: "rd.driver.blacklist=nouveau"
#   ALLOW_UNSIGNED_MODULES  true|false (default false). A module.sig_enforce value that turns
#                           signature checking off is refused unless this is true: it lets the
#                           kernel load any unsigned module. With Secure Boot on, the kernel's
#                           lockdown enforces signatures anyway and the argument does not help.
# Prints: nouveau_loaded=true|false, reboot_required=true|false
# Changes it reports: nouveau-blacklist, initramfs, nouveau-unloaded, kernel-args
set -euo pipefail
# script_text() in components/bare_metal/host_prep_steps.py replaces the next line with the text of lib.sh.
# shellcheck source=lib.sh
. "$(dirname -- "${BASH_SOURCE[0]}")/lib.sh" # host-prep:inline lib.sh

KERNEL_ARGS=${KERNEL_ARGS:-}
ALLOW_UNSIGNED_MODULES=${ALLOW_UNSIGNED_MODULES:-false}

hp_init nouveau
hp_check_choice ALLOW_UNSIGNED_MODULES "$ALLOW_UNSIGNED_MODULES" true false

read -ra requested_args <<<"$KERNEL_ARGS"
for arg in "${requested_args[@]}"; do
  if [[ ! $arg =~ ^[A-Za-z0-9_.-]+(=[A-Za-z0-9_.,:/@+-]*)?$ ]]; then
    hp_die 2 "KERNEL_ARGS: '$arg' is not a plain kernel argument (name or name=value)"
  fi
  if [[ $arg == module.sig_enforce=* && ! ${arg#*=} =~ ^(1|y|Y|on)$ ]]; then
    if [[ $ALLOW_UNSIGNED_MODULES != true ]]; then
      hp_die 2 "KERNEL_ARGS asks for $arg, which lets the kernel load unsigned modules; set ALLOW_UNSIGNED_MODULES=true to accept that"
    fi
    if [[ -r $HP_ROOT/sys/kernel/security/lockdown && $(<"$HP_ROOT/sys/kernel/security/lockdown") != *"[none]"* ]]; then
      hp_log "warning: kernel lockdown is active (Secure Boot); $arg will not let unsigned modules load"
    fi
  fi
done

hp_require_cmd dracut "install dracut; the initramfs must carry the nouveau blacklist"
if ((${#requested_args[@]} > 0)); then
  hp_require_cmd grubby "install grubby, or leave KERNEL_ARGS empty"
fi

# 1 + 2: blacklist file, and the initramfs that must carry it.
blacklist_file="$HP_ROOT/etc/modprobe.d/blacklist-nouveau.conf"
blacklist_content="# Written by gpu-platform host preparation (nouveau.sh); local edits are overwritten.
# nouveau must not claim the NVIDIA GPUs: the host driver (nvidia.ko) needs them.
blacklist nouveau
options nouveau modeset=0"
if hp_install_file "$blacklist_file" "$blacklist_content"; then
  hp_log "wrote $(hp_host_path "$blacklist_file")"
  hp_changed nouveau-blacklist
  hp_pending_set initramfs
fi
if hp_pending initramfs; then
  hp_log "rebuilding the initramfs of every installed kernel so the blacklist applies at boot"
  if ! dracut -f --regenerate-all >&2; then
    hp_die 1 "dracut -f --regenerate-all failed; the blacklist is written but the initramfs is stale. Fix dracut and re-run this step: it will retry the rebuild"
  fi
  hp_pending_clear initramfs
  hp_changed initramfs
fi

# 3: nouveau loaded right now (a host that booted before the blacklist existed).
if [[ -d $HP_ROOT/sys/module/nouveau ]]; then
  hp_require_cmd modprobe "install kmod"
  if modprobe -r nouveau >&2; then
    hp_log "unloaded nouveau"
    hp_changed nouveau-unloaded
  else
    hp_log "nouveau is in use and stays loaded until the next reboot"
  fi
fi

# 4: kernel arguments. grubby --info=ALL prints one args="..." line per boot entry; an argument
# counts as present only when every entry has it.
missing_args=()
if ((${#requested_args[@]} > 0)); then
  if ! grub_info=$(grubby --info=ALL); then
    hp_die 1 "grubby --info=ALL failed"
  fi
  entry_args=()
  while IFS= read -r line; do
    if [[ $line =~ ^args=\"(.*)\"$ ]]; then
      entry_args+=(" ${BASH_REMATCH[1]} ")
    fi
  done <<<"$grub_info"
  if ((${#entry_args[@]} == 0)); then
    hp_die 1 "grubby --info=ALL listed no boot entry with args; cannot check the kernel arguments"
  fi
  for arg in "${requested_args[@]}"; do
    for entry in "${entry_args[@]}"; do
      if [[ $entry != *" $arg "* ]]; then
        missing_args+=("$arg")
        break
      fi
    done
  done
fi
if ((${#missing_args[@]} > 0)); then
  hp_log "adding kernel arguments to every boot entry: ${missing_args[*]}"
  if ! grubby --update-kernel=ALL --args="${missing_args[*]}" >&2; then
    hp_die 1 "grubby --update-kernel=ALL --args='${missing_args[*]}' failed"
  fi
  hp_changed kernel-args
fi

# Facts, read from the live host.
nouveau_loaded=false
if [[ -d $HP_ROOT/sys/module/nouveau ]]; then
  nouveau_loaded=true
fi
reboot_required=$nouveau_loaded
cmdline=""
if [[ -r $HP_ROOT/proc/cmdline ]]; then
  cmdline=" $(<"$HP_ROOT/proc/cmdline") "
fi
for arg in "${requested_args[@]}"; do
  if [[ $cmdline != *" $arg "* ]]; then
    reboot_required=true
  fi
done
hp_fact nouveau_loaded "$nouveau_loaded"
hp_fact reboot_required "$reboot_required"
