// Ray-sphere intersection in view space: the nearest hit gives the normal and the depth written to
// gl_FragDepth, so impostors intersect meshes and each other exactly as real spheres would.
in vec3 v_pos;
flat in vec3 v_center;
flat in float v_radius;
flat in float v_speed;

uniform mat4 u_proj;
uniform int u_depth_only; // the shadow map's pass: depth, no shading
uniform int u_sprite;     // drawn as points (sphere_point.vert.glsl): the ray from gl_FragCoord
uniform vec4 u_viewport;  // sprites: x, y, width, height in pixels

// The quad lies on the plane that touches the sphere at its nearest point, and a sprite at the
// depth of the sphere's nearest view-space z, so the depth written is never nearer than the
// primitive's: with this the hardware may test depth before running the shader (most spheres of
// a pile are hidden).
#ifdef GL_ARB_conservative_depth
layout(depth_greater) out float gl_FragDepth;
#endif
uniform vec3 u_color;
uniform int u_by_speed;
uniform float u_speed_max;

out vec4 o_color;

void main() {
  vec3 dir;
  if (u_sprite != 0) { // through the pixel's centre, by the symmetric perspective u_proj
    vec2 ndc = (gl_FragCoord.xy - u_viewport.xy) / u_viewport.zw * 2.0 - 1.0;
    dir = normalize(vec3(ndc.x / u_proj[0][0], ndc.y / u_proj[1][1], -1.0));
  } else {
    dir = normalize(v_pos);
  }
  float b = dot(dir, v_center);
  float h = b * b - (dot(v_center, v_center) - v_radius * v_radius);
  if (h < 0.0) discard;
  vec3 hit = dir * (b - sqrt(h));
  vec3 n = (hit - v_center) / v_radius;
  vec4 clip = u_proj * vec4(hit, 1.0);
  float ndc = clip.z / clip.w;
  gl_FragDepth = (gl_DepthRange.diff * ndc + gl_DepthRange.near + gl_DepthRange.far) * 0.5;
  if (u_depth_only != 0) {
    o_color = vec4(0.0);
    return;
  }
  vec3 albedo = u_by_speed != 0 ? wf_speed_ramp(v_speed / u_speed_max) : u_color;
  o_color = vec4(wf_shade(albedo, n, -dir, hit), 1.0);
}
